"""Shared helpers for the simulator tests: scenarios, traces and the real Controller."""

from __future__ import annotations

import os
from pathlib import Path

import msgspec

from costart.cli.sim_cmd import controller_factory
from costart.sim.results import PolicyResult, run_policy
from costart.sim.scenario import load_scenario
from costart.sim.setup import SimSetup, draw_setup

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = ROOT / "scenarios"
TRACES = Path(os.environ.get("COSTART_TRACES", ROOT.parent / "shared" / "traces"))
SIM_SCENARIOS = sorted(p.stem.removeprefix("sim-") for p in SCENARIOS.glob("sim-*.toml"))


def setup_of(name: str, seed: int = 1) -> SimSetup:
    return draw_setup(load_scenario(SCENARIOS / f"sim-{name}.toml"), seed)


def run(setup: SimSetup, policy: str) -> PolicyResult:
    return run_policy(setup, policy, controller_factory)[0]


def without_timeline(result: PolicyResult) -> dict[str, object]:
    return {k: v for k, v in msgspec.structs.asdict(result).items() if k != "timeline"}
