"""Benchmark of the co-placement step (not a test).

1. The node-scale curve: decision time for ONE 64-member group (2-4 tasks each, four
   shapes, the whole group packed in one block, the 8-GPU members each packed in one
   rack) on clusters of 256, 1,024, 4,096, 16,384 and 65,536 nodes, about 40% of the
   nodes partly busy with running work (seeded), and the growth between sizes (time
   ratio against node ratio, and against 4,096 nodes). Two figures per size: a *cold*
   step (fresh: its first session reads the whole World) and a *warm* one (the step has
   decided once on the busy World; the group is then submitted and its events reach
   the step as committed events, as in ``serve``: the session reads what changed).
   Beside them, the part of a cold step no cold step can skip, timed alone: a fresh
   step's allocator reading the World (``world_read``; ADR 0126).
2. The session curve: one session over 1,000, 5,000 and 20,000 pending groups (RL
   gangs, serving sets, batch jobs) on the 4,096-node cluster of
   ``scenarios/cluster-4096.toml``, a fresh step each, and the ratios between them.

Each run times ``decide`` of the step the simulator and ``serve`` run (the incremental
one, `costart.placement.incremental.IncrementalStep`); the step is built before the clock
starts (``build_ms`` reports what that took). Medians of several runs.

With ``--baseline REV`` every figure is also measured on REV's code in the same run
(a detached worktree of REV on ``PYTHONPATH``, this file's workloads), the two sides
alternating run by run so the machine's drift falls on both, and the results record
each figure's ratio to the baseline. With ``--instructions`` valgrind counts the
instructions of one cold step per size and of the 1,000-group session, on both sides
(`ab_instructions`: the work less its setup), the steadier evidence on a noisy machine.
Writes bench/results/placement.json.
Run: python bench/bench_placement.py [--runs N] [--session-runs N]
     [--sessions 1000,5000,20000] [--baseline REV] [--instructions]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import statistics
import subprocess
import sys
import time
from itertools import pairwise
from pathlib import Path
from typing import Any

from common import write_results

from costart.domain import scheduling
from costart.domain.aggregates import GroupUnit
from costart.domain.events import Assignment
from costart.domain.lifecycle import submit
from costart.domain.spec import spec_from_object
from costart.domain.spec_types import GroupSpec
from costart.domain.world import World
from costart.placement import Cluster, Node, load_cluster
from costart.placement.incremental import IncrementalStep

ROOT = Path(__file__).resolve().parents[1]
CLUSTER = ROOT / "scenarios" / "cluster-4096.toml"
SEED = 4
# zones, blocks per zone, racks per block, nodes per rack
SIZES = {
    256: (1, 1, 8, 32),
    1024: (1, 4, 8, 32),
    4096: (2, 8, 8, 32),
    16384: (4, 16, 8, 32),
    65536: (16, 16, 8, 32),
}
REFERENCE_SIZE = 4096  # the node-scale goals are ratios to this size's time
SESSIONS = (1000, 5000, 20000)
BUSY_SHARE = 0.4
BLOCK_PACK = {"level": "block", "policy": "pack", "required": True}
RACK_PACK = {"level": "rack", "policy": "pack", "required": True}


# --- the 64-member group -------------------------------------------------------------


def grid_cluster(zones: int, blocks: int, racks: int, nodes: int) -> Cluster:
    return Cluster(
        ["zone", "block", "rack"],
        [
            Node(
                f"z{z}-b{b}-r{r}-n{n}",
                (f"z{z}", f"b{b}", f"r{r}"),
                gpu=8,
                cpu=128,
                mem_gb=2048,
                gpu_type="H100",
            )
            for z in range(zones)
            for b in range(blocks)
            for r in range(racks)
            for n in range(nodes)
        ],
    )


def big_group() -> GroupSpec:
    """64 members of four shapes, 2-4 tasks each: ~700 GPUs in one block."""
    shapes = [
        {"gpu": 8, "cpu": 96, "mem_gb": 1024},
        {"gpu": 4, "cpu": 48, "mem_gb": 512},
        {"gpu": 2, "cpu": 24, "mem_gb": 256},
        {"gpu": 1, "cpu": 12, "mem_gb": 128},
    ]
    members: list[dict[str, Any]] = []
    for i in range(64):
        member: dict[str, Any] = {"name": f"m{i:02d}", "shape": shapes[i % 4]}
        if i % 2:
            member.update(kind="replica-set", replicas=2 + i % 3)
        else:
            member.update(kind="job", tasks=2 + i % 3)
        if i % 4 == 0:
            member["topology"] = RACK_PACK
        members.append(member)
    return spec_from_object(
        {"name": "big", "owner": "bench", "placement": {"topology": BLOCK_PACK}, "members": members}
    )


def _place(world: World, spec: GroupSpec, assignments: dict[str, tuple[Assignment, ...]]) -> None:
    for event in submit(world, spec, 0).pending_events:
        world.apply(event)
    group = world.group_named(spec.name)
    unit = GroupUnit(group, world.members_of(group))
    scheduling.place_group(unit, assignments, 0)
    for event in unit.pending_events:
        world.apply(event)


def busy_world(cluster: Cluster, rng: random.Random, *, with_group: bool = True) -> World:
    """Running work on ~40% of the nodes: 1, 2 or 4 tasks of 2 GPUs each; then the
    64-member group submitted (unless not ``with_group``)."""
    world = World()
    nodes = [
        name
        for node in cluster.nodes
        if rng.random() < BUSY_SHARE
        for name in [node.name] * rng.choice([1, 2, 4])
    ]
    shape = {"gpu": 2, "cpu": 32, "mem_gb": 512}
    for k in range(0, len(nodes), 4096):  # at most 4,096 tasks per member
        chunk = nodes[k : k + 4096]
        spec = spec_from_object(
            {
                "name": f"busy{k // 4096}",
                "owner": "bench",
                "members": [{"name": "w", "kind": "job", "tasks": len(chunk), "shape": shape}],
            }
        )
        _place(world, spec, {"w": tuple(Assignment(i, n) for i, n in enumerate(chunk))})
    if with_group:
        for event in submit(world, big_group(), 0).pending_events:
            world.apply(event)
    return world


def fresh_step(size: int) -> IncrementalStep:
    """A step as ``serve`` and the simulator build it (its allocator counting usage from
    the same committed events), over a fresh cluster of ``size`` nodes."""
    return IncrementalStep.on_cluster(grid_cluster(*SIZES[size]))


def time_group(size: int, runs: int) -> dict[str, Any]:
    """Cold and warm decision times of the 64-member group on ``size`` nodes."""
    cluster = grid_cluster(*SIZES[size])
    world = busy_world(cluster, random.Random(SEED))
    cold, builds, reads, placed = [], [], [], True
    for _ in range(runs):
        started = time.perf_counter()
        step = fresh_step(size)
        builds.append(time.perf_counter() - started)
        seconds, decisions = _timed(step, world)
        placed = placed and _placed(decisions)
        cold.append(seconds)
        reads.append(_world_read(size, world))
    del world
    # Warm: steps that have each decided once on the running work alone; the group's
    # submit then reaches them as committed events, and their next session is timed.
    world = busy_world(cluster, random.Random(SEED), with_group=False)
    steps = [fresh_step(size) for _ in range(runs)]
    for step in steps:
        step.decide(world, 1)
    events = list(submit(world, big_group(), 0).pending_events)
    for event in events:
        world.apply(event)
    world.position += 1
    warm = []
    for step in steps:
        step.committed(events, world.position)
        seconds, decisions = _timed(step, world)
        placed = placed and _placed(decisions)
        warm.append(seconds)
    return {
        "nodes": size,
        "placed": placed,
        **_stats(cold, 1000, "ms"),
        "warm": _stats(warm, 1000, "ms"),
        "world_read": _stats(reads, 1000, "ms"),
        "build_ms": round(statistics.median(builds) * 1000, 4),
    }


def _world_read(size: int, world: World) -> float:
    """What a cold step cannot skip, timed alone: a fresh step's allocator reading the
    World (counting the running work per node, computing the free capacity of the nodes
    it is on), the start of every cold session (ADR 0126)."""
    allocator = fresh_step(size).allocator
    gc.collect()
    started = time.perf_counter()
    allocator.free_capacity(world)
    seconds = time.perf_counter() - started
    allocator.commit()
    return seconds


def _placed(decisions: list[Any]) -> bool:
    return any(type(d).__name__ == "PlaceGroup" for d in decisions)


# --- one session over many pending groups --------------------------------------------


def workload(count: int, rng: random.Random) -> list[GroupSpec]:
    """RL-style gangs (trainer pack in a rack, rollout), serving sets, small jobs."""
    specs = []
    for i in range(count):
        kind = rng.choice(["rl", "rl", "serve", "batch"])
        placement: dict[str, Any] = {"mode": rng.choice(["atomic", "reserve"])}
        doc: dict[str, Any] = {
            "name": f"g{i:04d}",
            "owner": "bench",
            "priority": rng.randint(0, 3),
            "placement": placement,
        }
        if kind == "rl":
            placement["topology"] = BLOCK_PACK
            doc["members"] = [
                {
                    "name": "trainer",
                    "kind": "job",
                    "tasks": rng.choice([8, 16, 32]),
                    "shape": {"gpu": 8, "cpu": 96, "mem_gb": 1024},
                    "topology": RACK_PACK,
                },
                {
                    "name": "rollout",
                    "kind": "replica-set",
                    "replicas": rng.choice([16, 32, 64]),
                    "shape": {"gpu": 1, "cpu": 8, "mem_gb": 64},
                },
            ]
        elif kind == "serve":
            doc["members"] = [
                {
                    "name": "prefill",
                    "kind": "replica-set",
                    "replicas": rng.choice([4, 8]),
                    "shape": {"gpu": 4, "cpu": 32, "mem_gb": 256},
                    "topology": {"level": "rack", "policy": "spread"},
                },
                {
                    "name": "decode",
                    "kind": "replica-set",
                    "replicas": rng.choice([8, 16]),
                    "shape": {"gpu": 2, "cpu": 16, "mem_gb": 128},
                },
            ]
        else:
            doc["members"] = [
                {
                    "name": "job",
                    "kind": "job",
                    "tasks": rng.choice([4, 16, 64, 128]),
                    "shape": {"gpu": 8, "cpu": 64, "mem_gb": 512},
                },
            ]
        specs.append(spec_from_object(doc))
    return specs


def time_session(groups: int, runs: int) -> dict[str, Any]:
    definition = load_cluster(CLUSTER)
    world = World()
    for spec in workload(groups, random.Random(SEED)):
        for event in submit(world, spec, 0).pending_events:
            world.apply(event)
    timings, count = [], 0
    for _ in range(runs):
        seconds, decisions = _timed(IncrementalStep.in_memory(definition), world)
        count = len(decisions)
        timings.append(seconds)
    return {
        "nodes": len(definition.nodes),
        "pending_groups": groups,
        "decisions": count,
        **_stats(timings, 1, "s"),
    }


# --- shared --------------------------------------------------------------------------


def _timed(step: IncrementalStep, world: World) -> tuple[float, list[Any]]:
    gc.collect()
    started = time.perf_counter()
    decisions = step.decide(world, 1)
    return time.perf_counter() - started, decisions


def _stats(timings: list[float], scale: int, unit: str) -> dict[str, Any]:
    return {
        "runs": len(timings),
        f"median_{unit}": round(statistics.median(timings) * scale, 4),
        f"min_{unit}": round(min(timings) * scale, 4),
        f"max_{unit}": round(max(timings) * scale, 4),
    }


# --- this code against a baseline's, in the same run ---------------------------------


def _figure(kind: str, size: int, runs: int, tree: Path | None) -> dict[str, Any]:
    """One figure (``group`` of ``size`` nodes, or ``session`` of ``size`` groups), on
    this tree's code or, with ``tree``, that tree's (in a child process: this file's
    workloads, that tree's ``costart`` first on the path)."""
    if tree is None:
        return time_group(size, runs) if kind == "group" else time_session(size, runs)
    env = {**os.environ, "PYTHONPATH": str(tree), "PYTHONHASHSEED": "0"}
    done = subprocess.run(
        [sys.executable, __file__, "--worker", kind, str(size), str(runs)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    figure: dict[str, Any] = json.loads(done.stdout)
    return figure


def _paired(
    kind: str, size: int, runs: int, baseline: Path | None
) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """The figure on this code and (with ``baseline``) on the baseline's, measured in
    alternating rounds of one run each (the side that goes first swapping), so that
    the machine's drift falls on both; the runs of each side pooled. Both sides run in
    child processes alike."""
    if baseline is None:
        return _figure(kind, size, runs, None), None
    ours: list[dict[str, Any]] = []
    theirs: list[dict[str, Any]] = []
    for i in range(runs):
        sides = [(ours, ROOT), (theirs, baseline)]
        for into, tree in sides if i % 2 == 0 else sides[::-1]:
            into.append(_figure(kind, size, 1, tree))
    return _pooled(ours), _pooled(theirs)


def _pooled(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    """One figure from single-run ones: medians, minima and maxima over them all."""
    out = dict(rounds[0])
    for unit in ("ms", "s"):
        if f"median_{unit}" in out:
            out.update(_stats([r[f"median_{unit}"] for r in rounds], 1, unit))
    if "warm" in out:
        out["warm"] = _stats([r["warm"]["median_ms"] for r in rounds], 1, "ms")
        out["world_read"] = _stats([r["world_read"]["median_ms"] for r in rounds], 1, "ms")
        out["build_ms"] = round(statistics.median(r["build_ms"] for r in rounds), 4)
        out["placed"] = all(r["placed"] for r in rounds)
    return out


def _less_read(row: dict[str, Any]) -> float:
    less: float = row["median_ms"] - row["world_read"]["median_ms"]
    return less


def _ratio(a: float, b: float) -> float:
    return round(a / b, 3)


def _growth(rows: list[dict[str, Any]], key: str) -> list[dict[str, Any]]:
    """Between consecutive rows: node ratio, time ratio and time per node ratio."""
    growth = []
    for prev, row in pairwise(rows):
        node_ratio = row["nodes"] / prev["nodes"]
        time_ratio = _read(row, key) / _read(prev, key)
        growth.append(
            {
                "from": prev["nodes"],
                "to": row["nodes"],
                "node_ratio": node_ratio,
                "time_ratio": round(time_ratio, 3),
                "per_node_ratio": round(time_ratio / node_ratio, 3),
            }
        )
    return growth


def _read(row: dict[str, Any], key: str) -> float:
    value: float = row["warm"]["median_ms"] if key == "warm" else row["median_ms"]
    return value


def _print_curve(title: str, rows: list[dict[str, Any]], base: list[dict[str, Any]] | None) -> None:
    print(title)
    reference = next(r for r in rows if r["nodes"] == REFERENCE_SIZE)
    for i, row in enumerate(rows):
        line = (
            f"  {row['nodes']:>6} nodes: cold {row['median_ms']:7.2f} ms "
            f"(x{row['median_ms'] / reference['median_ms']:.2f} of {REFERENCE_SIZE})  "
            f"warm {row['warm']['median_ms']:7.2f} ms  build {row['build_ms']:.0f} ms  "
            f"world read {row['world_read']['median_ms']:6.2f} ms"
            f"{'' if row['placed'] else '  NOT PLACED'}"
        )
        if base is not None:
            line += (
                f"  | baseline cold {base[i]['median_ms']:7.2f} ms "
                f"warm {base[i]['warm']['median_ms']:7.2f} ms"
            )
        print(line)


def _instructions(baseline: Path | None, sessions: list[int]) -> dict[str, Any]:
    """Instructions of one cold step per size and of the smallest session, this code's
    and (with ``baseline``) the baseline's: `ab_instructions`' drivers and counting."""
    from ab_instructions import GROUP_DRIVER, SESSION_DRIVER, _work

    trees = {"new": ROOT, **({"base": baseline} if baseline is not None else {})}
    table: dict[str, Any] = {}
    for side, tree in trees.items():
        for size, dims in SIZES.items():
            if size < REFERENCE_SIZE:
                continue
            work = _work(tree, GROUP_DRIVER, [str(size), "1", ",".join(map(str, dims))])
            table.setdefault(f"group_64.{size}", {})[side] = work
        table.setdefault(f"session_{sessions[0]}", {})[side] = _work(
            tree, SESSION_DRIVER, [str(sessions[0])]
        )
        print(f"instructions counted: {side}", flush=True)
    for row in table.values():
        if "base" in row:
            row["ratio"] = _ratio(row["new"], row["base"])
    return table


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=15, help="runs per cluster size")
    parser.add_argument("--session-runs", type=int, default=5)
    parser.add_argument(
        "--sessions",
        default=",".join(map(str, SESSIONS)),
        help="pending groups per session figure, comma-separated",
    )
    parser.add_argument("--groups", type=int, help="one session figure of this many groups")
    parser.add_argument("--baseline", help="a commit to measure in the same run")
    parser.add_argument("--instructions", action="store_true", help="count with valgrind")
    parser.add_argument("--worker", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker is not None:  # one figure, this process's code, printed as JSON
        kind, size, runs = args.worker[0], int(args.worker[1]), int(args.worker[2])
        print(json.dumps(_figure(kind, size, runs, None)))
        return
    sessions = [args.groups] if args.groups else [int(n) for n in args.sessions.split(",")]
    if args.baseline is None:
        _run(args, sessions, None, None)
        return
    from ab_compare import _git, _worktrees

    rev = _git("rev-parse", args.baseline)
    with _worktrees({"base": rev}) as trees:
        _run(args, sessions, trees["base"], rev)


def _run(args: argparse.Namespace, sessions: list[int], tree: Path | None, rev: str | None) -> None:
    pairs = [_paired("group", size, args.runs, tree) for size in SIZES]
    sizes = [ours for ours, _ in pairs]
    base = None if tree is None else [theirs for _, theirs in pairs if theirs is not None]
    _print_curve(
        "one 64-member group (block pack, 8-GPU members rack-packed), ~40% of nodes busy:",
        sizes,
        base,
    )
    session_pairs = [_paired("session", n, args.session_runs, tree) for n in sessions]
    session_rows = [ours for ours, _ in session_pairs]
    for i, (row, theirs) in enumerate(session_pairs):
        line = (
            f"one session: {row['nodes']} nodes, {row['pending_groups']:>6} pending groups, "
            f"{row['decisions']} decisions: median {row['median_s']:.3f} s "
            f"(min {row['min_s']:.3f}, max {row['max_s']:.3f}, {row['runs']} runs)"
        )
        if i:
            line += f"  x{row['median_s'] / session_rows[0]['median_s']:.2f} of the first"
        if theirs is not None:
            line += f"  | baseline {theirs['median_s']:.3f} s"
        print(line)
    reference = next(r for r in sizes if r["nodes"] == REFERENCE_SIZE)
    result: dict[str, Any] = {
        "seed": SEED,
        "group_64": sizes,
        "growth": _growth(sizes, "cold"),
        "warm_growth": _growth(sizes, "warm"),
        "vs_reference": {
            str(r["nodes"]): _ratio(r["median_ms"], reference["median_ms"]) for r in sizes
        },
        "warm_vs_reference": {
            str(r["nodes"]): _ratio(r["warm"]["median_ms"], reference["warm"]["median_ms"])
            for r in sizes
        },
        # The cold step less its reading of the World (medians subtracted), against
        # 4,096 nodes: what of a cold step grows with the cluster besides the running
        # work it must read (ADR 0126).
        "cold_less_world_read_vs_reference": {
            str(r["nodes"]): _ratio(_less_read(r), _less_read(reference)) for r in sizes
        },
        "session": session_rows[0],
        "sessions": session_rows,
        "session_vs_first": {
            str(r["pending_groups"]): _ratio(r["median_s"], session_rows[0]["median_s"])
            for r in session_rows
        },
    }
    if base is not None:
        result["baseline"] = {
            "rev": rev,
            "group_64": base,
            "sessions": [theirs for _, theirs in session_pairs],
        }
        result["vs_baseline"] = {
            **{
                f"group_64.{r['nodes']}": _ratio(r["median_ms"], b["median_ms"])
                for r, b in zip(sizes, base, strict=True)
            },
            **{
                f"session_{r['pending_groups']}": _ratio(r["median_s"], b["median_s"])
                for r, (_, b) in zip(session_rows, session_pairs, strict=True)
                if b is not None
            },
        }
        print("vs baseline:", result["vs_baseline"])
    if args.instructions:
        result["instructions"] = _instructions(tree, sessions)
        for name, row in result["instructions"].items():
            print(f"  instructions {name}: {row}")
    # The targets and their verdicts: `targets.TARGETS["placement"]`, printed by write_results.
    write_results("placement", result)


if __name__ == "__main__":
    main()
