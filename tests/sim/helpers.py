"""Shared helpers for the simulator tests: scenarios, traces and the real Controller."""

from __future__ import annotations

from pathlib import Path

import msgspec

from costart.cli.sim_cmd import controller_factory
from costart.sim.results import PolicyResult, run_policy
from costart.sim.scenario import load_scenario
from costart.sim.setup import SimSetup, draw_setup

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = ROOT / "scenarios"
# Small extracts of the public traces, in the repository (`tests/data/traces/README.md`).
# Never the full traces (`COSTART_TRACES`): the tests read nothing outside the repository.
TRACES = ROOT / "tests" / "data" / "traces"
# Measurement scenarios: hundreds of groups per run, too long for the per-scenario suites
# (every policy, every session compared, 15 recorded seeds); their own tests run a few
# seeds and `bench/bench_scheduling.py` runs 20.
MEASUREMENT_SCENARIOS = ("starvation", "starvation-backfill", "half-partition", "llm-day")
SIM_SCENARIOS = sorted(
    name
    for name in (p.stem.removeprefix("sim-") for p in SCENARIOS.glob("sim-*.toml"))
    if name not in MEASUREMENT_SCENARIOS
)


def setup_of(name: str, seed: int = 1) -> SimSetup:
    return draw_setup(load_scenario(SCENARIOS / f"sim-{name}.toml"), seed)


def run(setup: SimSetup, policy: str) -> PolicyResult:
    return run_policy(setup, policy, controller_factory)[0]


def without_timeline(result: PolicyResult) -> dict[str, object]:
    return {k: v for k, v in msgspec.structs.asdict(result).items() if k != "timeline"}
