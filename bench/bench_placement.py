"""Benchmark of the co-placement step (not a test).

1. Decision time for ONE 64-member group (2-4 tasks each, four shapes, the whole group
   packed in one block, the 8-GPU members each packed in one rack) on clusters of 256,
   1,024, 4,096 and 16,384 nodes, about 40% of the nodes partly busy with running work
   (seeded). Prints the median per size and the growth between sizes: time ratio
   against node ratio (linear growth means time ratio <= node ratio).
2. One session over 1,000 pending groups (RL gangs, serving sets, batch jobs) on the
   4,096-node cluster of ``scenarios/cluster-4096.toml``.

Each run times ``decide`` of the step the simulator and ``serve`` run (the incremental
one, `costart.placement.incremental.IncrementalStep`) on a fresh step (a cold session:
nothing cached from an earlier one). Medians of several runs; the machine may be noisy.
Writes bench/results/placement.json.
Run: python bench/bench_placement.py [--runs N] [--session-runs N] [--groups N]
"""

from __future__ import annotations

import argparse
import gc
import random
import statistics
import time
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
SIZES = {256: (1, 1, 8, 32), 1024: (1, 4, 8, 32), 4096: (2, 8, 8, 32), 16384: (4, 16, 8, 32)}
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


def busy_world(cluster: Cluster, rng: random.Random) -> World:
    """Running work on ~40% of the nodes: 1, 2 or 4 tasks of 2 GPUs each."""
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
    for event in submit(world, big_group(), 0).pending_events:
        world.apply(event)
    return world


def fresh_step(size: int) -> IncrementalStep:
    """A step as ``serve`` and the simulator build it (its allocator counting usage from
    the same committed events), over a fresh cluster of ``size`` nodes."""
    return IncrementalStep.on_cluster(grid_cluster(*SIZES[size]))


def time_group(size: int, runs: int) -> dict[str, Any]:
    cluster = grid_cluster(*SIZES[size])
    world = busy_world(cluster, random.Random(SEED))
    timings, placed = [], False
    for _ in range(runs):
        seconds, decisions = _timed(fresh_step(size), world)
        placed = any(type(d).__name__ == "PlaceGroup" for d in decisions)
        timings.append(seconds)
    return {"nodes": size, "placed": placed, **_stats(timings, 1000, "ms")}


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


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=15, help="runs per cluster size")
    parser.add_argument("--session-runs", type=int, default=5)
    parser.add_argument("--groups", type=int, default=1000)
    args = parser.parse_args()

    sizes = [time_group(size, args.runs) for size in SIZES]
    print("one 64-member group (block pack, 8-GPU members rack-packed), ~40% of nodes busy:")
    growth = []
    for i, row in enumerate(sizes):
        line = (
            f"  {row['nodes']:>6} nodes: median {row['median_ms']:7.2f} ms "
            f"(min {row['min_ms']:.2f}, max {row['max_ms']:.2f}, {row['runs']} runs)"
            f"{'' if row['placed'] else '  NOT PLACED'}"
        )
        if i:
            prev = sizes[i - 1]
            node_ratio = row["nodes"] / prev["nodes"]
            time_ratio = row["median_ms"] / prev["median_ms"]
            growth.append(
                {
                    "from": prev["nodes"],
                    "to": row["nodes"],
                    "node_ratio": node_ratio,
                    "time_ratio": round(time_ratio, 3),
                    "per_node_ratio": round(time_ratio / node_ratio, 3),
                }
            )
            line += (
                f"  x{time_ratio:.2f} time for x{node_ratio:.0f} nodes "
                f"(per node x{time_ratio / node_ratio:.2f})"
            )
        print(line)
    session = time_session(args.groups, args.session_runs)
    print(
        f"one session: {session['nodes']} nodes, {session['pending_groups']} pending groups, "
        f"{session['decisions']} decisions: median {session['median_s']:.3f} s "
        f"(min {session['min_s']:.3f}, max {session['max_s']:.3f}, {session['runs']} runs)"
    )

    # The targets and their verdicts: `targets.TARGETS["placement"]`, printed by write_results.
    result = {"seed": SEED, "group_64": sizes, "growth": growth, "session": session}
    write_results("placement", result)


if __name__ == "__main__":
    main()
