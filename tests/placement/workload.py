"""A seeded, busy placement workload driven through a real Controller, for tests that
compare decisions: against recorded digests (the optimized step decides as the plain one
did), and across processes with different ``PYTHONHASHSEED``.

Everything random comes from one `random.Random(seed)`; the cluster mixes GPU types and
the groups mix every constraint kind, placement mode, priorities, claims, restarts,
scale-ups, node loss and drains, so most branches of the step are reached.

Run as a script (``python -m tests.placement.workload SEED``) it prints one digest per
session.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import random
import sys
from collections.abc import Callable, Sequence
from typing import Any

import msgspec

from costart.bootstrap import Settings, bootstrap
from costart.controller import Controller
from costart.domain import decisions as dec
from costart.domain.errors import SpecError
from costart.domain.events import DomainEvent
from costart.domain.spec_types import GroupSpec, Topology
from costart.domain.world import World
from costart.logging_setup import configure_logging
from costart.placement import Allocator, Cluster, CoPlacementStep, InMemoryAllocator, Node
from costart.placement.incremental import EventJournal, IncrementalStep, UsedCount
from tests.builders import HOST, USER, fail, ready, start, succeed

from .builders import ManualClock, a_group

PLACEMENT_GROUPS = {
    "pg-block": Topology("block", "pack", True),
    "pg-spread": Topology("rack", "spread", False),
}
_encoder = msgspec.json.Encoder()


def mixed_cluster(rng: random.Random) -> Cluster:
    """zone/block/rack; whole blocks are H100 or A100, a few racks have 4-GPU nodes."""
    nodes = []
    for z in range(2):
        for b in range(rng.randint(1, 3)):
            gpu_type = rng.choice(["H100", "H100", "A100"])
            for r in range(rng.randint(2, 4)):
                gpu = rng.choice([8, 8, 8, 4])
                for n in range(rng.randint(2, 6)):
                    nodes.append(
                        Node(
                            f"z{z}-b{b}-r{r}-n{n}",
                            (f"z{z}", f"b{b}", f"r{r}"),
                            gpu=gpu,
                            cpu=16 * gpu,
                            mem_gb=128 * gpu,
                            gpu_type=gpu_type,
                        )
                    )
    return Cluster(["zone", "block", "rack"], nodes)


def _topology(rng: random.Random) -> dict[str, Any] | str | None:
    kind = rng.random()
    if kind < 0.45:
        return None
    if kind < 0.55:
        return rng.choice(sorted(PLACEMENT_GROUPS))
    return {
        "level": rng.choice(["zone", "block", "rack"]),
        "policy": rng.choice(["pack", "pack", "spread"]),
        "required": rng.random() < 0.6,
    }


def random_spec(rng: random.Random, name: str) -> GroupSpec:
    builder = a_group(name).with_priority(rng.randint(0, 3))
    if rng.random() < 0.5:
        builder = builder.reserve(timeout=f"{rng.choice([60, 300])}s", backoff="30s")
    else:
        builder = builder.atomic()
    group_topology = _topology(rng)
    if isinstance(group_topology, dict) and group_topology["policy"] == "spread":
        group_topology = None  # spreading a whole group is covered by member spreads
    if group_topology is not None:
        builder = builder.with_topology(group_topology)
    if rng.random() < 0.3:
        builder = builder.with_rule("restart-member")
    for j in range(rng.randint(1, 4)):
        gpu = rng.choice([1, 2, 4, 8])
        gpu_type = rng.choice([None, None, None, "H100", "A100"])
        topology = None if isinstance(group_topology, str) else _topology(rng)
        if isinstance(topology, str):
            topology = None
        claims = ("gpus",) if rng.random() < 0.2 else ()
        if rng.random() < 0.5:
            builder = builder.with_member(
                f"m{j}",
                gpu=gpu,
                cpu=8 * gpu,
                mem_gb=64 * gpu,
                gpu_type=gpu_type,
                tasks=rng.randint(1, 10),
                topology=topology,
                claims=claims,
            )
        else:
            replicas = rng.randint(1, 12)
            builder = builder.with_member(
                f"m{j}",
                gpu=gpu,
                cpu=8 * gpu,
                mem_gb=64 * gpu,
                gpu_type=gpu_type,
                replicas=replicas,
                min_start=rng.randint(1, replicas),
                topology=topology,
                claims=claims,
            )
    return builder.build()


class RecordingStep:
    """The real step, keeping every session's decisions."""

    def __init__(self, step: CoPlacementStep) -> None:
        self.step = step
        self.sessions: list[list[dec.Decision]] = []

    def check_feasible(self, spec: GroupSpec) -> None:
        self.step.check_feasible(spec)

    def check_node(self, node: str) -> None:
        self.step.check_node(node)

    def decide(self, world: World, now_ns: int) -> list[dec.Decision]:
        decisions = self.step.decide(world, now_ns)
        self.sessions.append(decisions)
        return decisions

    def committed(self, events: Sequence[DomainEvent], position: int) -> None:
        self.step.committed(events, position)


def run_workload(
    seed: int,
    sessions: int = 30,
    groups: int = 60,
    wrap: Callable[[CoPlacementStep], CoPlacementStep] | None = None,
    allocator: Callable[[Cluster], Allocator] | None = None,
    between: Callable[[Controller], None] | None = None,
    *,
    plain: bool = False,
) -> list[list[dec.Decision]]:
    """Drive a seeded workload for ``sessions`` sessions; every session's decisions.
    ``wrap``: put something around the step (a checker); ``allocator``: the step's
    allocator over the cluster (default: the in-memory one, counting usage from the
    committed events as the simulator's does); ``between``: called before each session
    (after the workload's own disturbances), e.g. to move the host's other work.
    ``plain``: the plain reference step instead of the incremental one."""
    rng = random.Random(seed)
    cluster = mixed_cluster(rng)
    step = make_step(cluster, allocator, plain=plain)
    recorder = RecordingStep(wrap(step) if wrap is not None else step)
    clock = ManualClock()
    controller = bootstrap(Settings(), placement=recorder, clock=clock)
    names = [n.name for n in cluster.nodes]
    submitted = 0
    for _ in range(sessions):
        for _ in range(rng.randint(0, max(1, 2 * groups // sessions))):
            if submitted < groups:
                with contextlib.suppress(SpecError):  # refused at submit: never fits
                    controller.submit(random_spec(rng, f"g{submitted}"))
                submitted += 1
        _disturb(controller, rng, names)
        if between is not None:
            between(controller)
        now = clock.advance(rng.choice([1, 5, 20, 45]))
        controller.tick(now)
        controller.schedule(now)
    return recorder.sessions


def make_step(
    cluster: Cluster, allocator: Callable[[Cluster], Allocator] | None, *, plain: bool
) -> CoPlacementStep:
    """The workload's step over ``cluster`` (see `run_workload`)."""
    if plain:
        made = allocator(cluster) if allocator is not None else InMemoryAllocator(cluster)
        return CoPlacementStep(made, PLACEMENT_GROUPS)
    journal = EventJournal()
    if allocator is None:
        return IncrementalStep(
            InMemoryAllocator(cluster, UsedCount(cluster)),
            PLACEMENT_GROUPS,
            journal,
        )
    return IncrementalStep(allocator(cluster), PLACEMENT_GROUPS, journal)


def _disturb(controller: Controller, rng: random.Random, names: list[str]) -> None:
    """Running work finishes, claims turn READY, members fail, sets scale, nodes change."""
    for group in controller.groups():
        for name in [m.name for m in controller.members(group.name)]:
            ref = f"{group.name}/{name}"
            member = controller.world.member_named(controller.group(group.name), name)
            if member.status == "PLACED":
                for claim, status in sorted(member.claims.items()):
                    if status == "PENDING" and rng.random() < 0.5:
                        ready(controller, ref, claim)
            elif member.status == "READY" and controller.may_start(ref):
                start(controller, ref)
            elif member.status == "RUNNING":
                roll = rng.random()
                if roll < 0.05:
                    fail(controller, ref, "error")
                elif roll < 0.1 and member.spec.kind == "replica-set" and member.desired < 16:
                    controller.scale(ref, member.desired + 1, actor=USER)
                elif roll < 0.2 and member.spec.kind == "job":
                    succeed(controller, ref)
    roll = rng.random()
    if roll < 0.1:
        controller.set_node_status(rng.choice(names), rng.choice(["down", "drained"]), actor=HOST)
    elif roll < 0.2:
        controller.set_node_status(rng.choice(names), "up", actor=HOST)


# Fields added after the digests were recorded, left out while at their default (None):
# a decision that does not use them is the decision it was (ADR 0108's planned start).
_ADDED_LATER = {"PendReason": ("planned_start_ns", "planned_basis")}


def _every_field(obj: Any) -> Any:
    """``obj`` with every struct as a dict of all its fields, defaults included: the
    form the digests were recorded in before structs left defaults out (ADR 0024)."""
    if isinstance(obj, msgspec.Struct):
        config = obj.__struct_config__
        later = _ADDED_LATER.get(type(obj).__name__, ())
        fields = {
            f: _every_field(getattr(obj, f))
            for f in obj.__struct_fields__
            if not (f in later and getattr(obj, f) is None)
        }
        return list(fields.values()) if config.array_like else fields
    if isinstance(obj, dict):
        return {k: _every_field(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_every_field(v) for v in obj]
    return obj


def digests(sessions: list[list[dec.Decision]]) -> list[str]:
    """One short digest per session of the exact decisions (order and every field)."""
    return [hashlib.sha256(_encoder.encode(_every_field(s))).hexdigest()[:16] for s in sessions]


if __name__ == "__main__":
    configure_logging(level=logging.WARNING)
    for digest in digests(run_workload(int(sys.argv[1]), plain="--plain" in sys.argv[2:])):
        print(digest)
