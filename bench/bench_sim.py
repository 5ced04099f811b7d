"""Benchmark: the simulator end to end (real Controller, placement, in-memory store).

Not a test. Two figures, written to bench/results/sim.json:

* events per second: every policy over the mixed scenario (several seeds), counting the
  events written to the log, wall time of the whole run (setup, sessions, checks);
* the whole PAI 2020 sample (every complete multi-role job) under each policy, wall time.

Each of costart's policies is held to the targets on its own (`targets.py`); the naive
``independent`` baseline is reported beside them, never pooled into a target figure.

Run: python bench/bench_sim.py [--seeds N] [--traces PATH] [--compress F]
(the full traces: the folder $COSTART_TRACES names; without them the PAI part is skipped).
"""

from __future__ import annotations

import argparse
import logging
import os
import time
from pathlib import Path

from common import write_results
from targets import COSTART_POLICIES

from costart.cli.sim_cmd import controller_factory
from costart.logging_setup import configure_logging
from costart.sim.results import POLICIES, run_policy
from costart.sim.scenario import load_scenario
from costart.sim.setup import draw_setup
from costart.sim.trace_setup import TraceOptions, trace_setup

ROOT = Path(__file__).resolve().parents[1]
TARGET_EVENTS_PER_S = 20_000
TARGET_PAI_S = 120


def events_per_second(seeds: int) -> dict[str, object]:
    scenario = load_scenario(ROOT / "scenarios" / "sim-mixed.toml")
    per_policy: dict[str, object] = {}
    for policy in POLICIES:
        events, seconds = 0, 0.0
        for seed in range(1, seeds + 1):
            setup = draw_setup(scenario, seed)
            start = time.perf_counter()
            result, _ = run_policy(setup, policy, controller_factory)
            seconds += time.perf_counter() - start
            events += result.log_events
        per_policy[policy] = {
            "events": events,
            "s": round(seconds, 3),
            "events_per_s": round(events / seconds),
        }
        rate = events / seconds
        verdict = (
            ("met" if rate >= TARGET_EVENTS_PER_S else "NOT met")
            if policy in COSTART_POLICIES
            else "baseline, no target"
        )
        print(
            f"mixed x{seeds} {policy}: {events} events in {seconds:.2f}s = {rate:,.0f}/s "
            f"(target >= {TARGET_EVENTS_PER_S:,}/s: {verdict})"
        )
    return {
        "scenario": "sim-mixed",
        "seeds": seeds,
        "policies": per_policy,
        "target_events_per_s": TARGET_EVENTS_PER_S,
    }


def pai(traces: Path, compress: float) -> dict[str, object]:
    setup = trace_setup("pai", traces, 1, TraceOptions(compress=compress))
    out: dict[str, object] = {
        "groups": len(setup.workload.arrivals),
        "compress": compress,
        "nodes": len(setup.cluster.nodes),
    }
    for policy in POLICIES:
        start = time.perf_counter()
        result, _ = run_policy(setup, policy, controller_factory)
        seconds = time.perf_counter() - start
        out[policy] = {
            "wall_s": round(seconds, 3),
            "events": result.log_events,
            "events_per_s": round(result.log_events / seconds),
            "partial_starts": result.partial_starts,
            "deadlocked": result.deadlocked,
            "partial_start_waste_gpu_hours": result.partial_start_waste_gpu_hours,
            "idle_held_gpu_hours": result.idle_held_gpu_hours,
            "time_to_start_p50_s": result.time_to_start_p50_s,
            "time_to_start_p99_s": result.time_to_start_p99_s,
        }
        print(f"PAI {policy}: {seconds:.1f}s wall, {result.log_events} events")
    out["target_wall_s_per_policy"] = TARGET_PAI_S
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--compress", type=float, default=50.0)
    default = os.environ.get("COSTART_TRACES") or None
    parser.add_argument("--traces", type=Path, default=default)
    args = parser.parse_args()
    configure_logging(level=logging.WARNING)
    results: dict[str, object] = {"benchmark": "sim: end to end, in-memory store"}
    results["events"] = events_per_second(args.seeds)
    if args.traces is not None and (args.traces / "README.md").exists():
        results["pai_whole_sample"] = pai(args.traces, args.compress)
    else:
        print(f"no traces at {args.traces or '$COSTART_TRACES'}: PAI part skipped")
    write_results("sim", results)


if __name__ == "__main__":
    main()
