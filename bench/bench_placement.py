"""Benchmark: one scheduling session over the 4,096-node cluster with ~200 pending groups.

Not a test. Prints the median of several runs and writes bench/results/placement.json.
Run: python bench/bench_placement.py [--runs N] [--groups N]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from pathlib import Path

from costart.domain.lifecycle import submit
from costart.domain.spec import spec_from_object
from costart.domain.spec_types import GroupSpec
from costart.domain.world import World
from costart.placement import CoPlacementStep, load_cluster
from costart.placement.cluster_file import ClusterDefinition

ROOT = Path(__file__).resolve().parents[1]
CLUSTER = ROOT / "scenarios" / "cluster-4096.toml"
RESULTS = ROOT / "bench" / "results" / "placement.json"
SEED = 4


def _workload(count: int, rng: random.Random) -> list[GroupSpec]:
    """RL-style gangs (trainer pack in a rack, rollout), serving sets, small jobs."""
    specs = []
    for i in range(count):
        kind = rng.choice(["rl", "rl", "serve", "batch"])
        doc: dict[str, object] = {
            "name": f"g{i:03d}",
            "owner": "bench",
            "priority": rng.randint(0, 3),
        }
        doc["placement"] = {"mode": rng.choice(["atomic", "reserve"])}
        if kind == "rl":
            doc["placement"]["topology"] = {"level": "block", "policy": "pack", "required": True}  # type: ignore[index]
            doc["members"] = [
                {
                    "name": "trainer",
                    "kind": "job",
                    "tasks": rng.choice([8, 16, 32]),
                    "shape": {"gpu": 8, "cpu": 96, "mem_gb": 1024},
                    "topology": {"level": "rack", "policy": "pack", "required": True},
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


def _world(specs: list[GroupSpec]) -> World:
    """A World with every group submitted (no controller, no store: the step alone)."""
    world = World()
    for spec in specs:
        unit = submit(world, spec, 0)
        world.apply_all(unit.pending_events)
    return world


def _one_session(definition: ClusterDefinition, world: World) -> tuple[float, int]:
    step = CoPlacementStep.in_memory(definition)
    started = time.perf_counter()
    decisions = step.decide(world, 1)
    return time.perf_counter() - started, len(decisions)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--groups", type=int, default=200)
    args = parser.parse_args()
    definition = load_cluster(CLUSTER)
    world = _world(_workload(args.groups, random.Random(SEED)))
    timings, decisions = [], 0
    for _ in range(args.runs):
        seconds, decisions = _one_session(definition, world)
        timings.append(seconds)
    median = statistics.median(timings)
    result = {
        "benchmark": "placement: one session",
        "nodes": len(definition.nodes),
        "pending_groups": args.groups,
        "decisions": decisions,
        "runs": args.runs,
        "seed": SEED,
        "median_s": round(median, 4),
        "min_s": round(min(timings), 4),
        "max_s": round(max(timings), 4),
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")
    print(
        f"placement session: {len(definition.nodes)} nodes, {args.groups} pending groups, "
        f"{decisions} decisions; median {median * 1000:.1f} ms over {args.runs} runs "
        f"(min {min(timings) * 1000:.1f}, max {max(timings) * 1000:.1f})"
    )


if __name__ == "__main__":
    main()
