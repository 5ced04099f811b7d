"""A/B of the simulator and placement benchmarks between two commits (not a test).

Usage: python bench/ab_compare.py BASE_REV [--new REV] [--rounds N] [--quick]
                                   [--sim-seeds N] [--out PATH]

Checks out ``BASE_REV`` and ``--new`` (default HEAD) into temporary git worktrees and
runs each one's own ``bench/bench_sim.py`` and ``bench/bench_placement.py``, alternately
in the same run: round after round, each benchmark once per side, the side that goes
first swapping every round (so drift in the machine's load falls on both). Each side's
own ``costart`` is first on ``PYTHONPATH``, and its results are written inside its
worktree, never over this tree's ``bench/results``.

For every figure (the mixed scenario's seconds per policy, the PAI sample's wall time
per policy, the 64-member group's median per cluster size, the 1,000-group session's
median) it reports the median over the rounds on each side and the ratio new / base,
and says whether every ratio is within ``--limit`` (default 1.05). Writes
``bench/results/ab/ab-<base>-<new>.json`` unless ``--out`` is given. ``--quick`` leaves out
the PAI sample and runs the placement benchmark with fewer repeats (5 per size, 3
sessions): the same figures otherwise, for a machine too busy for the full run.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
BENCHES = ("sim", "placement")
RUN_TIMEOUT_S = 3600
Figures = dict[str, float]


def _git(*args: str) -> str:
    done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=True)
    return done.stdout.strip()


@contextmanager
def _worktrees(revs: dict[str, str]) -> Iterator[dict[str, Path]]:
    """A detached worktree per side, removed afterwards."""
    base = Path(tempfile.mkdtemp(prefix="costart-ab-"))
    made: dict[str, Path] = {}
    try:
        for side, rev in revs.items():
            path = base / side
            _git("worktree", "add", "--detach", str(path), rev)
            made[side] = path
        yield made
    finally:
        for path in made.values():
            subprocess.run(
                ["git", "worktree", "remove", "--force", str(path)], cwd=ROOT, check=False
            )
        shutil.rmtree(base, ignore_errors=True)


# For the drivers that run inside a side's worktree with its `bench_placement` imported as
# ``bp`` (`ab_instructions.py`, `ab_paired.py`): the 64-member group's step, built as that
# side's benchmark builds it (benchmarks before `fresh_step` built the plain step).
FRESH_STEP = """
def fresh_step(size):
    if hasattr(bp, "fresh_step"):
        return bp.fresh_step(size)
    return bp.CoPlacementStep(bp.InMemoryAllocator(bp.grid_cluster(*bp.SIZES[size])))
"""


def _run(tree: Path, bench: str, args: list[str]) -> dict[str, Any]:
    """Run one benchmark over ``tree``'s code; its results file."""
    env = {**os.environ, "PYTHONPATH": str(tree), "PYTHONHASHSEED": "0"}
    script = tree / "bench" / f"bench_{bench}.py"
    subprocess.run(
        [sys.executable, str(script), *args],
        cwd=tree,
        env=env,
        check=True,
        timeout=RUN_TIMEOUT_S,
        stdout=subprocess.DEVNULL,
    )
    result: dict[str, Any] = json.loads((tree / "bench" / "results" / f"{bench}.json").read_text())
    return result


def sim_figures(result: dict[str, Any]) -> Figures:
    """Seconds of the mixed scenario per policy, and PAI wall seconds per policy."""
    out = {
        f"sim.mixed.{policy}.s": float(row["s"])
        for policy, row in sorted(result["events"]["policies"].items())
    }
    pai = result.get("pai_whole_sample")
    if pai is not None:
        for policy, row in sorted(pai.items()):
            if isinstance(row, dict) and "wall_s" in row:
                out[f"sim.pai.{policy}.wall_s"] = float(row["wall_s"])
    return out


def placement_figures(result: dict[str, Any]) -> Figures:
    """The 64-member group's median per cluster size, and the session's median."""
    out = {
        f"placement.group_64.{row['nodes']}.median_ms": float(row["median_ms"])
        for row in result["group_64"]
    }
    out["placement.session_1000.median_s"] = float(result["session"]["median_s"])
    return out


FIGURES: dict[str, Callable[[dict[str, Any]], Figures]] = {
    "sim": sim_figures,
    "placement": placement_figures,
}


def compare(
    rounds: list[dict[str, Figures]], limit: float
) -> tuple[dict[str, dict[str, Any]], bool]:
    """Per figure: each side's median over ``rounds``, the ratio, within ``limit``; and
    each side's best (the least disturbed by other work on the machine) for context."""
    names = sorted(set(rounds[0]["base"]) & set(rounds[0]["new"]))
    table: dict[str, dict[str, Any]] = {}
    for name in names:
        base = statistics.median(r["base"][name] for r in rounds)
        new = statistics.median(r["new"][name] for r in rounds)
        ratio = new / base if base else float("inf")
        best_base = min(r["base"][name] for r in rounds)
        best_new = min(r["new"][name] for r in rounds)
        table[name] = {
            "base_median": round(base, 4),
            "new_median": round(new, 4),
            "ratio": round(ratio, 3),
            "within": ratio <= limit,
            "base_best": round(best_base, 4),
            "new_best": round(best_new, 4),
            "best_ratio": round(best_new / best_base if best_base else float("inf"), 3),
        }
    return table, all(row["within"] for row in table.values())


def _rounds(
    revs: dict[str, str], count: int, bench_args: dict[str, list[str]], started: float
) -> list[dict[str, Figures]]:
    """``count`` rounds, each running every benchmark once per side, alternating which
    side goes first."""
    rounds: list[dict[str, Figures]] = []
    with _worktrees(revs) as trees:
        for i in range(count):
            order = ("base", "new") if i % 2 == 0 else ("new", "base")
            figures: dict[str, Figures] = {"base": {}, "new": {}}
            for bench in BENCHES:
                for side in order:
                    result = _run(trees[side], bench, bench_args[bench])
                    figures[side].update(FIGURES[bench](result))
            rounds.append(figures)
            print(f"round {i + 1}/{count} done ({time.monotonic() - started:.0f} s)", flush=True)
    return rounds


def write_results(
    out: Path | None, stem: str, revs: dict[str, str], benchmark: str, fields: dict[str, Any]
) -> None:
    """Write an A/B's results (to ``out``, or ``bench/results/ab/<stem>-<base>-<new>.json``):
    what was run, both commits, ``fields``, and the machine's cores and load. A one-off
    comparison goes beside the others in ``ab/``, never among the benchmarks' current
    results (one file per benchmark, `tests/test_bench_results.py`)."""
    name = f"{stem}-{revs['base'][:8]}-{revs['new'][:8]}.json"
    path = out or ROOT / "bench" / "results" / "ab" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    record = {
        "benchmark": benchmark,
        "base": revs["base"],
        "new": revs["new"],
        **fields,
        "machine": {"cpus": os.cpu_count(), "load_average_1m": round(os.getloadavg()[0], 2)},
    }
    path.write_text(json.dumps(record, indent=2, sort_keys=True) + "\n")
    print(f"wrote {path}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("base", help="the commit to compare against")
    parser.add_argument("--new", default="HEAD")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--limit", type=float, default=1.05, help="largest new/base ratio")
    parser.add_argument("--out", type=Path)
    default_traces = os.environ.get("COSTART_TRACES") or None
    parser.add_argument("--traces", type=Path, default=default_traces)
    parser.add_argument("--quick", action="store_true", help="no PAI sample, fewer repeats")
    parser.add_argument(
        "--sim-seeds",
        type=int,
        default=3,
        help="seeds of the mixed scenario per policy (bench_sim's --seeds): more, a longer "
        "and so steadier figure",
    )
    args = parser.parse_args()
    # A stop (SIGTERM) unwinds like an interrupt, so the worktrees are removed.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    revs = {"base": _git("rev-parse", args.base), "new": _git("rev-parse", args.new)}
    seeds = ["--seeds", str(args.sim_seeds)]
    started = time.monotonic()
    with contextlib.ExitStack() as stack:
        # bench_sim skips the PAI part when the traces are not there.
        traces = str(args.traces.resolve()) if args.traces is not None else None
        if traces is None:
            traces = stack.enter_context(tempfile.TemporaryDirectory())
        bench_args = {"sim": ["--traces", traces, *seeds], "placement": []}
        if args.quick:
            no_traces = stack.enter_context(tempfile.TemporaryDirectory())
            bench_args = {
                "sim": ["--traces", no_traces, *seeds],
                "placement": ["--runs", "5", "--session-runs", "3"],
            }
        rounds = _rounds(revs, args.rounds, bench_args, started)
    table, within = compare(rounds, args.limit)
    for name, row in table.items():
        print(
            f"{name:45} base {row['base_median']:>10.4f}  new {row['new_median']:>10.4f}  "
            f"x{row['ratio']:.3f}{'' if row['within'] else '  OVER'}  (best x{row['best_ratio']:.3f})"
        )
    print(f"every new median within x{args.limit}: {'yes' if within else 'NO'}")
    write_results(
        args.out,
        "ab",
        revs,
        "A/B: bench_sim.py and bench_placement.py, alternating rounds",
        {
            "rounds": args.rounds,
            "quick": args.quick,
            "sim_seeds": args.sim_seeds,
            "limit": args.limit,
            "within_limit": within,
            "figures": table,
            "per_round": rounds,
        },
    )


if __name__ == "__main__":
    main()
