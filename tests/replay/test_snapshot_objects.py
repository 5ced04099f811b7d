"""Snapshots compared as objects: a world in which every field of every state class is
non-default somewhere is snapshotted, decoded, and compared field by field with the live
world -- by walking the objects, not by encoding both sides with the encoder under test
(which would repeat an encoder bug on both sides)."""

from __future__ import annotations

from typing import Any

import msgspec

from costart.domain.decisions import HoldCapacity, PlaceBorrower, PlaceMember, SetPendReason
from costart.domain.events import Assignment, PendReason, RuntimeEstimate
from costart.domain.states import GroupState, MemberState
from costart.domain.world import World
from costart.eventlog.snapshots import SNAPSHOT_STREAM_ID
from costart.replay.rebuild import rebuild
from costart.replay.source import RecorderSource
from tests.builders import (
    HOST,
    USER,
    ManualClock,
    a_group,
    fail,
    full_placement,
    new_controller,
    ready,
    start,
    succeed,
)

SECOND = 10**9


def busy_world():
    """A controller whose groups and members, between them, set every state field."""
    clock = ManualClock(start_ns=5 * SECOND)
    c = new_controller(clock)
    # g1: released once, restarted as a group, then degraded with restarts of both kinds.
    g1 = (
        a_group("g1")
        .with_member("trainer", tasks=2, claims=("gpus",))
        .with_member("rollout", replicas=3, min_start=2, min_running=1)
        .with_rule(
            "restart-member", members=("trainer",), reasons=("oom", "preempted"), max_restarts=3
        )
        .with_rule("restart-group", members=("trainer",), reasons=("error",))
        .with_rule("tolerate", members=("rollout",))
        .with_failure(default="fail-group", max_group_restarts=2)
        .with_placement(backoff="10s")
        .with_barrier("60s")
        .build()
    )
    c.submit(g1)
    c.apply_decisions(
        [SetPendReason("g1", PendReason("capacity", "no room", "trainer", "2×{gpu:1}", "b1", 1))]
    )
    c.apply_decisions([full_placement(g1, rack="a")])
    clock.advance(100)
    c.tick()  # barrier timed out: released, backoff
    c.apply_decisions([full_placement(g1, rack="b")])
    ready(c, "g1/trainer", "gpus")
    start(c, "g1/trainer")
    start(c, "g1/rollout")
    fail(c, "g1/trainer", "error", 3)  # restart-group
    c.apply_decisions([full_placement(g1, rack="c")])
    ready(c, "g1/trainer", "gpus")
    start(c, "g1/trainer")
    start(c, "g1/rollout")
    fail(c, "g1/trainer", "oom", 137)  # counted restart
    c.apply_decisions([PlaceMember("g1", "trainer", (Assignment(0, "d-1"), Assignment(1, "d-2")))])
    ready(c, "g1/trainer", "gpus")
    start(c, "g1/trainer")
    fail(c, "g1/trainer", "preempted", 143)  # uncounted restart
    c.apply_decisions([PlaceMember("g1", "trainer", (Assignment(0, "e-1"), Assignment(1, "e-2")))])
    c.scale("g1/rollout", 4, actor=USER)
    fail(c, "g1/rollout", "error", 1, 0)  # one replica: tolerated, DEGRADED
    # g2: reserving, with a pend reason and holds.
    g2 = a_group("g2").with_member("a", tasks=2).reserve(timeout="5m").build()
    c.submit(g2)
    c.apply_decisions([HoldCapacity("g2", {"a": (Assignment(0, "h-1"),)})])
    c.apply_decisions([SetPendReason("g2", PendReason("topology", "one rack", "a", None, None, 2))])
    # g3: placed, waiting at the barrier on a claim.
    g3 = a_group("g3").with_member("a", claims=("data",)).build()
    c.submit(g3)
    c.apply_decisions([full_placement(g3, rack="p")])
    # g4: ended (succeeded).
    g4 = a_group("g4").with_member("a").build()
    c.submit(g4)
    c.apply_decisions([full_placement(g4, rack="s")])
    start(c, "g4/a")
    succeed(c, "g4/a")
    # g5: a borrower admitted on a runtime estimate, until an hour from now (ADR 0121).
    g5 = a_group("g5").with_member("a").build()
    c.submit(g5)
    guess = RuntimeEstimate(member="a", runtime_ns=3600 * SECOND, basis="estimate", samples=3)
    until = clock.now_ns + 3600 * SECOND
    c.apply_decisions([PlaceBorrower("g5", {"a": (Assignment(0, "t-1"),)}, "g2", until, (guess,))])
    c.set_node_status("x-9", "drained", actor=HOST)
    return c


def non_default_fields(cls: type[msgspec.Struct], instances: list[Any]) -> set[str]:
    """The fields of ``cls`` that differ from the default in at least one instance."""
    blank: dict[str, Any] = {}
    for field in msgspec.structs.fields(cls):
        if field.default is not msgspec.NODEFAULT:
            blank[field.name] = field.default
        elif field.default_factory is not msgspec.NODEFAULT:
            blank[field.name] = field.default_factory()
    required = {f.name for f in msgspec.structs.fields(cls)} - set(blank)
    seen = set(required)  # a required field has no default to be left at
    for instance in instances:
        seen |= {name for name, value in blank.items() if getattr(instance, name) != value}
    return seen


def field_names(cls: type[msgspec.Struct]) -> set[str]:
    return {f.name for f in msgspec.structs.fields(cls)}


def assert_same(live: Any, restored: Any, path: str) -> None:
    """Walk both objects; name the first field that differs."""
    assert type(live) is type(restored), (
        f"{path}: {type(live).__name__} != {type(restored).__name__}"
    )
    if isinstance(live, msgspec.Struct):
        for name in field_names(type(live)):
            assert_same(getattr(live, name), getattr(restored, name), f"{path}.{name}")
    elif isinstance(live, dict):
        assert list(live) == list(restored) or sorted(live) == sorted(restored), f"{path}: keys"
        for key in live:
            assert_same(live[key], restored[key], f"{path}[{key!r}]")
    elif isinstance(live, list | tuple):
        assert len(live) == len(restored), f"{path}: length {len(live)} != {len(restored)}"
        for index, (a, b) in enumerate(zip(live, restored, strict=True)):
            assert_same(a, b, f"{path}[{index}]")
    else:
        assert live == restored, f"{path}: {live!r} != {restored!r}"


def test_the_busy_world_sets_every_field_of_every_state_class():
    world = busy_world().world
    groups, members = list(world.groups.values()), list(world.members.values())
    assert non_default_fields(GroupState, groups) == field_names(GroupState)
    assert non_default_fields(MemberState, members) == field_names(MemberState)
    assert non_default_fields(World, [world]) == field_names(World)


def test_a_snapshot_decodes_to_the_live_world_field_by_field():
    c = busy_world()
    position = c.snapshot_now()
    snapshot = c.session.snapshots_store.read(position)
    assert_same(c.world, snapshot.world(), "world")
    # and a replay of the log, compared the same way
    assert_same(c.world, rebuild(RecorderSource(c.recorder)), "world")
    assert SNAPSHOT_STREAM_ID  # the snapshots live in their own stream


def test_the_comparison_names_a_field_that_differs():
    c = busy_world()
    restored = c.session.snapshots_store.read(c.snapshot_now()).world()
    member = next(iter(restored.members.values()))
    member.uncounted_restarts += 1
    try:
        assert_same(c.world, restored, "world")
    except AssertionError as error:
        assert "uncounted_restarts" in str(error)
    else:
        raise AssertionError("a changed field went unnoticed")
