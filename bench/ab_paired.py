"""A/B of two commits in paired, interleaved runs (not a test).

Usage: python bench/ab_paired.py BASE_REV [--new REV] [--reps N] [--out PATH]

`ab_compare.py` alternates whole benchmark runs, a minute or more each; on a shared
virtual machine the speed the machine gives a process drifts over such spans (the same
run of the same code takes 0.55 s in one minute and 1.4 s in the next), so a median of
five rounds can be 30% off either way. Here one long-lived worker process per side (its
own worktree's code, imported once) runs one workload at a time, the two sides back to
back and the first of the pair swapped every time, and each pair gives a ratio measured
seconds apart. A process's memory layout (where the allocator and address-space
randomisation put things) moves its times by a few percent for its whole life, the same
way every rep: ``--workers N`` spreads the pairs over N successive worker pairs, so one
lucky or unlucky process does not set the figure (each worker pair's own median is
written too). The figure is the median of the paired ratios: drift slower than a pair
cancels. Workloads: each policy over each of the mixed scenario's three seeds
(`bench_sim.py`'s figure, by seed), and a cold session of the 64-member group on each
cluster size and one session over 1,000 pending groups (`bench_placement.py`'s, each step
built as that side's benchmark builds it).
Times are the worker's CPU time (`time.process_time`) and wall time; setup is outside.
Writes ``bench/results/ab/ab-paired-<base>-<new>.json`` unless ``--out`` is given.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, TextIO

from ab_compare import FRESH_STEP, _git, _worktrees, write_results

POLICIES = ("atomic", "reserve", "independent")
SEEDS = (1, 2, 3)
GROUP_SIZES = (256, 1024, 4096, 16384)

# The worker: reads one JSON job per line, answers one JSON line with its times.
WORKER = (
    """
import json, logging, random, sys, time
from pathlib import Path
sys.path.insert(0, "bench")
from costart.cli.sim_cmd import controller_factory
from costart.logging_setup import configure_logging
from costart.sim.results import run_policy
from costart.sim.scenario import load_scenario
from costart.sim.setup import draw_setup
import bench_placement as bp
configure_logging(level=logging.WARNING)
scenario = load_scenario(Path("scenarios") / "sim-mixed.toml")
worlds = {}
"""
    + FRESH_STEP
    + """
print("ready", flush=True)
for line in sys.stdin:
    job = json.loads(line)
    if job["kind"] == "sim":
        setup = draw_setup(scenario, job["seed"])
        work = lambda: run_policy(setup, job["policy"], controller_factory)
    elif job["kind"] == "session":
        if "session" not in worlds:
            world = worlds["session"] = bp.World()
            for spec in bp.workload(1000, random.Random(bp.SEED)):
                for event in bp.submit(world, spec, 0).pending_events:
                    world.apply(event)
        step_class = getattr(bp, "IncrementalStep", None) or bp.CoPlacementStep
        step = step_class.in_memory(bp.load_cluster(bp.CLUSTER))
        work = lambda: step.decide(worlds["session"], 1)
    else:
        size = job["size"]
        if size not in worlds:
            worlds[size] = bp.busy_world(bp.grid_cluster(*bp.SIZES[size]), random.Random(bp.SEED))
        step = fresh_step(size)
        work = lambda: step.decide(worlds[size], 1)
    cpu, wall = time.process_time(), time.perf_counter()
    work()
    print(json.dumps({"cpu": time.process_time() - cpu, "wall": time.perf_counter() - wall}), flush=True)
"""
)


class Worker:
    """One side's long-lived process."""

    def __init__(self, tree: Path) -> None:
        env = {**os.environ, "PYTHONPATH": str(tree), "PYTHONHASHSEED": "0"}
        self.process = subprocess.Popen(
            [sys.executable, "-c", WORKER],
            cwd=tree,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        if self._read() != "ready":
            raise SystemExit(f"the worker over {tree} did not start")

    def _read(self) -> str:
        out: TextIO | None = self.process.stdout
        assert out is not None
        line = out.readline()
        if not line:
            raise SystemExit(f"a worker stopped (exit {self.process.wait()})")
        return line.strip()

    def run(self, job: dict[str, Any]) -> dict[str, float]:
        stdin = self.process.stdin
        assert stdin is not None
        stdin.write(json.dumps(job) + "\n")
        stdin.flush()
        times: dict[str, float] = json.loads(self._read())
        return times

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        self.process.wait(timeout=60)


def jobs() -> list[tuple[str, dict[str, Any]]]:
    """Every workload once, with the figure name it counts towards."""
    out = [
        (f"sim.mixed.{policy}", {"kind": "sim", "policy": policy, "seed": seed})
        for policy in POLICIES
        for seed in SEEDS
    ]
    out += [(f"placement.group_64.{size}", {"kind": "group", "size": size}) for size in GROUP_SIZES]
    out.append(("placement.session_1000", {"kind": "session"}))
    return out


def _warm_workers(trees: dict[str, Path]) -> dict[str, Worker]:
    """One new worker per side, each workload run once unmeasured (caches and worlds
    warm)."""
    workers = {side: Worker(tree) for side, tree in trees.items()}
    for _, job in jobs():
        for worker in workers.values():
            worker.run(job)
    return workers


def _close(workers: dict[str, Worker]) -> None:
    for worker in workers.values():
        worker.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("base", help="the commit to compare against")
    parser.add_argument("--new", default="HEAD")
    parser.add_argument("--reps", type=int, default=7, help="pairs per workload")
    parser.add_argument(
        "--workers",
        type=int,
        default=1,
        help="successive worker pairs the pairs are spread over: each process has its own "
        "memory layout, which moves a side's times by a few percent for its whole life",
    )
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    revs = {"base": _git("rev-parse", args.base), "new": _git("rev-parse", args.new)}
    ratios: dict[str, dict[str, list[float]]] = {}
    by_pair: dict[str, dict[int, list[float]]] = {}  # cpu ratios by worker pair
    started = time.monotonic()
    turn = 0
    with _worktrees(revs) as trees:
        for rep in range(args.reps):
            pair, first = divmod(rep, -(-args.reps // args.workers))
            if first == 0:  # a fresh pair of workers
                workers = _warm_workers(trees)
            try:
                for name, job in jobs():
                    order = ("base", "new") if turn % 2 == 0 else ("new", "base")
                    turn += 1
                    times = {side: workers[side].run(job) for side in order}
                    row = ratios.setdefault(name, {"cpu": [], "wall": []})
                    for clock in ("cpu", "wall"):
                        row[clock].append(times["new"][clock] / times["base"][clock])
                    by_pair.setdefault(name, {}).setdefault(pair, []).append(row["cpu"][-1])
            except BaseException:
                _close(workers)
                raise
            if (rep + 1) % -(-args.reps // args.workers) == 0 or rep + 1 == args.reps:
                _close(workers)
            print(f"rep {rep + 1}/{args.reps} ({time.monotonic() - started:.0f} s)", flush=True)
    table = {
        name: {
            "pairs": len(row["cpu"]),
            "cpu_ratio_median": round(statistics.median(row["cpu"]), 3),
            "wall_ratio_median": round(statistics.median(row["wall"]), 3),
            "cpu_ratio_quartiles": [round(q, 3) for q in statistics.quantiles(row["cpu"], n=4)],
            "cpu_ratio_median_by_worker_pair": [
                round(statistics.median(pair_ratios), 3) for pair_ratios in by_pair[name].values()
            ],
        }
        for name, row in ratios.items()
    }
    for name, row in table.items():
        print(
            f"{name:28} cpu x{row['cpu_ratio_median']:.3f}  wall x{row['wall_ratio_median']:.3f}"
            f"  (cpu quartiles {row['cpu_ratio_quartiles']}, {row['pairs']} pairs;"
            f" by worker pair {row['cpu_ratio_median_by_worker_pair']})"
        )
    write_results(
        args.out,
        "ab-paired",
        revs,
        "A/B in paired runs: one worker per side, back to back, median of new/base per pair",
        {"reps": args.reps, "worker_pairs": args.workers, "figures": table},
    )


if __name__ == "__main__":
    main()
