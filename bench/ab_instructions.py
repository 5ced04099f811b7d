"""A/B of instructions executed between two commits, under valgrind (not a test).

Usage: python bench/ab_instructions.py BASE_REV [--new REV] [--out PATH]

The wall-clock A/B (`ab_compare.py`) follows the machine's load: on a shared virtual
machine one run in ten can be 10% off. Instructions executed do not: the same program on
the same input runs the same instructions whatever else the machine does, so a 2%
difference shows as 2% every time. (They are not time: cache misses and branch
mispredictions are not counted. They say what the code does, the wall-clock A/B what it
costs on this machine.)

Each side's own code (a detached worktree, as in `ab_compare.py`) runs each workload
twice under ``valgrind --tool=cachegrind --cache-sim=no``: once with the work, once with
only its setup (imports, scenario, cluster and World built); the difference is the
work's. Workloads: the mixed scenario's three seeds per policy (`bench_sim.py`'s
figure), and a cold session of the 64-member group on 4,096 and 16,384 nodes
(`bench_placement.py`'s, three steps each, built as that side's benchmark builds them),
and one session over 1,000 pending groups (`bench_placement.py`'s session figure).
Writes ``bench/results/ab/instructions-<base>-<new>.json`` unless ``--out`` is given.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

from ab_compare import FRESH_STEP, _git, _worktrees, write_results

POLICIES = ("atomic", "reserve", "independent")
GROUP_SIZES = (4096, 16384)
GROUP_STEPS = 3
REFS = re.compile(r"I\s+refs:\s+([\d,]+)")

# Run inside a side's worktree (its ``costart`` and ``bench`` first on the path). argv:
# the policy, and whether to run the work ("1") or only its setup ("0").
SIM_DRIVER = """
import logging, sys
from pathlib import Path
from costart.cli.sim_cmd import controller_factory
from costart.logging_setup import configure_logging
from costart.sim.results import run_policy
from costart.sim.scenario import load_scenario
from costart.sim.setup import draw_setup
configure_logging(level=logging.WARNING)
scenario = load_scenario(Path("scenarios") / "sim-mixed.toml")
setups = [draw_setup(scenario, seed) for seed in range(1, 4)]
if sys.argv[2] == "1":
    for setup in setups:
        run_policy(setup, sys.argv[1], controller_factory)
"""

# argv: the cluster size, the number of steps, optionally the grid's zones, blocks,
# racks and nodes comma-separated (for a size the side's benchmark lacks), and last "1"
# (decide) or "0" (setup only).
GROUP_DRIVER = (
    """
import random, sys
sys.path.insert(0, "bench")
import bench_placement as bp
size, steps = int(sys.argv[1]), int(sys.argv[2])
if len(sys.argv) > 4:
    bp.SIZES[size] = tuple(int(k) for k in sys.argv[3].split(","))
world = bp.busy_world(bp.grid_cluster(*bp.SIZES[size]), random.Random(bp.SEED))
"""
    + FRESH_STEP
    + """
made = [fresh_step(size) for _ in range(steps)]
if sys.argv[-1] == "1":
    for step in made:
        step.decide(world, 1)
"""
)

# argv: optionally the number of pending groups (1,000 by default), and last "1"
# (decide) or "0" (setup only). One session over them on the benchmark cluster, the
# step built as that side's benchmark builds it.
SESSION_DRIVER = """
import random, sys
sys.path.insert(0, "bench")
import bench_placement as bp
world = bp.World()
groups = int(sys.argv[1]) if len(sys.argv) > 2 else 1000
for spec in bp.workload(groups, random.Random(bp.SEED)):
    for event in bp.submit(world, spec, 0).pending_events:
        world.apply(event)
step_class = getattr(bp, "IncrementalStep", None) or bp.CoPlacementStep
step = step_class.in_memory(bp.load_cluster(bp.CLUSTER))
if sys.argv[-1] == "1":
    step.decide(world, 1)
"""


# Counted runs have one thread. numpy's OpenBLAS starts a thread per core at import,
# and its idle threads spin before they sleep; valgrind runs one thread at a time, so
# how long they spin (and the count) follows the scheduler: the same code counted
# 48 M, 57 M, 11 M, 22 M and 120 M for one cold step on 4,096 nodes (ADR 0152).
# One BLAS thread starts no server; the check after the driver fails a count that
# another thread could have moved.
# Nor does a counted run compile or write bytecode: whether a module's cache was there
# moved a count by 0.4% (none anywhere) to 100 M (a first run writing them, ADR 0149), so
# `_compiled` writes the tree's caches before it is counted and the runs only read them.
# And a counted run gets this environment and nothing inherited: its size and content
# (the shell's PWD, OLDPWD, ``_``) moved a count by up to 90,000 instructions.
STEADY_ENV = {
    "PATH": "/usr/bin:/bin",
    "LANG": "C.UTF-8",
    "PYTHONHASHSEED": "0",
    "OPENBLAS_NUM_THREADS": "1",
    "OMP_NUM_THREADS": "1",
    "PYTHONDONTWRITEBYTECODE": "1",
}
ONE_THREAD = """
import os as _os
_threads = _os.listdir("/proc/self/task")
if len(_threads) != 1:
    raise SystemExit(f"the counted process runs {len(_threads)} threads: its count is not steady")
"""


def count_instructions(
    tree: Path, driver: str, args: list[str], *, bench_on_path: bool = False
) -> int:
    """Instructions valgrind counts for ``driver`` run over ``tree``'s code, in one thread
    and a fixed environment (every benchmark that counts instructions counts here);
    ``bench_on_path``: the driver imports ``tree``'s bench modules by name."""
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        raise SystemExit("valgrind is not installed (apt-get install valgrind)")
    paths = [tree, tree / "bench"] if bench_on_path else [tree]
    env = {"PYTHONPATH": os.pathsep.join(map(str, paths)), **STEADY_ENV}
    done = subprocess.run(
        [
            valgrind,
            "--tool=cachegrind",
            "--cache-sim=no",
            "--cachegrind-out-file=/dev/null",
            sys.executable,
            "-c",
            driver + ONE_THREAD,
            *args,
        ],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"the counted run of {tree} failed:\n{done.stderr[-2000:]}")
    found = REFS.search(done.stderr)
    if found is None:
        raise SystemExit(f"valgrind printed no instruction count:\n{done.stderr[-2000:]}")
    return int(found.group(1).replace(",", ""))


def _compiled(tree: Path) -> None:
    """Write the bytecode caches of ``tree``'s code, so no counted run compiles it."""
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", "costart", "bench"],
        cwd=tree,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": ""},
        check=True,
        stdout=subprocess.DEVNULL,
    )


def _work(tree: Path, driver: str, args: list[str]) -> int:
    """The work's instructions: with it, less setup only."""
    _compiled(tree)
    return count_instructions(tree, driver, [*args, "1"]) - count_instructions(
        tree, driver, [*args, "0"]
    )


def measure(tree: Path) -> dict[str, int]:
    figures = {f"sim.mixed.{p}": _work(tree, SIM_DRIVER, [p]) for p in POLICIES}
    for size in GROUP_SIZES:
        total = _work(tree, GROUP_DRIVER, [str(size), str(GROUP_STEPS)])
        figures[f"placement.group_64.{size}"] = total // GROUP_STEPS
    figures["placement.session_1000"] = _work(tree, SESSION_DRIVER, [])
    return figures


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("base", help="the commit to compare against")
    parser.add_argument("--new", default="HEAD")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (apt-get install valgrind)")
    revs = {"base": _git("rev-parse", args.base), "new": _git("rev-parse", args.new)}
    started = time.monotonic()
    measured: dict[str, dict[str, int]] = {}
    with _worktrees(revs) as trees:
        for side, tree in trees.items():
            measured[side] = measure(tree)
            print(f"{side} measured ({time.monotonic() - started:.0f} s)", flush=True)
    table = {
        name: {
            "base": measured["base"][name],
            "new": measured["new"][name],
            "ratio": round(measured["new"][name] / measured["base"][name], 4),
        }
        for name in measured["base"]
    }
    for name, row in table.items():
        print(f"{name:32} base {row['base']:>14,}  new {row['new']:>14,}  x{row['ratio']:.4f}")
    write_results(
        args.out,
        "instructions",
        revs,
        "A/B: instructions executed (valgrind cachegrind), work less setup",
        {"figures": table},
    )


if __name__ == "__main__":
    main()
