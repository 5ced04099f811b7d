"""`WorldUsage` kept across sessions equals a count from scratch."""

from __future__ import annotations

from typing import Any

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

from costart.domain import decisions as dec
from costart.domain.world import World
from costart.placement import CoPlacementStep
from costart.placement.allocator import used_capacity
from costart.placement.usage import WorldUsage, wants_single

from .workload import run_workload


def _from_scratch(world: World, usage: WorldUsage) -> tuple[object, ...]:
    fresh = WorldUsage(usage._cluster)
    fresh.sync(world)
    return fresh.used, fresh.held_total, fresh.held_by, fresh.live, fresh.wanting


def _layout(world: World, usage: WorldUsage) -> tuple[object, ...]:
    """What an unchanged `WorldUsage.layout` promises is unchanged."""
    return (
        list(usage.used),
        list(usage.held_total),
        {g: dict(h) for g, h in usage.held_by.items()},
        [(g.name, [(tuple(m.held), tuple(m.assignments)) for m in ms]) for g, ms in usage.live],
    )


class UsageCheck:
    """Before each session: the step's kept usage, synced, equals a fresh count, and
    its per-node use equals `used_capacity`."""

    def __init__(self, step: CoPlacementStep) -> None:
        self.step = step
        self.kept = WorldUsage(step.cluster)
        self.sessions = 0
        self.last: tuple[int, tuple[object, ...]] | None = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self.step, name)

    def decide(self, world: World, now_ns: int) -> list[dec.Decision]:
        self.kept.sync(world)
        usage = self.kept
        kept = (usage.used, usage.held_total, usage.held_by, usage.live, usage.wanting)
        assert kept == _from_scratch(world, usage)
        live = [m for _, members in usage.live for m in members]
        assert usage.wanting == sum(map(wants_single, live))
        layout = _layout(world, usage)
        if self.last is not None and self.last[0] == usage.layout:
            assert self.last[1] == layout
        self.last = (usage.layout, layout)
        gpu, cpu, mem = used_capacity(world, self.step.cluster)
        assert self.kept.used == list(zip(gpu, cpu, mem, strict=True))
        self.sessions += 1
        return self.step.decide(world, now_ns)


@settings(max_examples=10, deadline=None)
@given(st.integers(0, 10_000))
def test_usage_kept_across_sessions_equals_a_count_from_scratch(seed: int) -> None:
    checks: list[UsageCheck] = []

    def wrap(step: CoPlacementStep) -> Any:
        checks.append(UsageCheck(step))
        return checks[-1]

    run_workload(seed, wrap=wrap)
    assert checks[0].sessions == 30


def test_a_replaced_member_object_is_recounted_and_listed() -> None:
    checks: list[UsageCheck] = []

    def wrap(step: CoPlacementStep) -> Any:
        checks.append(UsageCheck(step))
        return checks[-1]

    run_workload(3, sessions=12, wrap=wrap)
    usage = checks[0].kept
    world = usage._world
    assert world is not None and usage.live
    key = next(k for k, m in world.members.items() if m.held or m.assignments)
    member = world.members[key]
    world.members[key] = msgspec.structs.replace(member, held=[], assignments=[])
    usage.sync(world)
    kept = (usage.used, usage.held_total, usage.held_by, usage.live, usage.wanting)
    assert kept == _from_scratch(world, usage)
    listed = [m for _, members in usage.live for m in members]
    assert any(m is world.members[key] for m in listed)
    assert not any(m is member for m in listed)
