"""Placement decisions and timers applied to a group (`costart.domain.scheduling`),
directly on a unit: each refusal in its exact words with nothing recorded, each limit
taken at the limit and refused one past it, and each deadline fired at its instant and
not a nanosecond before."""

from __future__ import annotations

import pytest

from costart.domain.aggregates import GroupUnit
from costart.domain.decisions import HoldCapacity
from costart.domain.errors import DomainError, IllegalTransition
from costart.domain.events import Assignment, PendReason
from costart.domain.ids import group_id
from costart.domain.scheduling import (
    deadline_due,
    due_groups,
    hold_capacity,
    on_tick,
    place_group,
    place_member,
    release_group,
    set_pend_reason,
    wake_ns,
)
from costart.domain.states import GroupState
from tests.builders import (
    USER,
    a_group,
    full_placement,
    new_controller,
    running_controller,
    start,
)

SECOND_NS = 10**9


def spots(*indexes: int, rack: str = "r1") -> tuple[Assignment, ...]:
    return tuple(Assignment(i, f"{rack}-n{i:03d}") for i in indexes)


def unit_of(c, name: str = "g1") -> GroupUnit:
    group = c.world.group_named(name)
    return GroupUnit(group, c.world.members_of(group))


def waiting(reserve: bool = True):
    """A submitted group: job ``a`` (one task, claim gpus), replica set ``b`` (2, gang 2)."""
    builder = a_group().with_member("a", claims=("gpus",)).with_member("b", replicas=2)
    spec = (builder.reserve(timeout="15m") if reserve else builder.atomic()).build()
    c = new_controller()
    c.submit(spec)
    return c, unit_of(c)


def event_kinds(unit: GroupUnit) -> list[str]:
    return [type(e).__name__ for e in unit.pending_events]


def refused(call, kind: type[DomainError] = DomainError) -> str:
    with pytest.raises(kind) as caught:
        call()
    return str(caught.value)


# --- placing the gang --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("assignments", "message"),
    [
        ({"a": spots(0), "b": spots(0, 1), "zz": spots(0)}, "group g1 has no member(s) ['zz']"),
        ({"a": spots(0), "b": spots(0)}, "member b: 1 tasks placed, the gang needs 2"),
        ({"b": spots(0, 1)}, "member a: 0 tasks placed, the gang needs 1"),
        ({"a": spots(0), "b": spots(1, 1)}, "member b: duplicate task index in [1, 1]"),
        ({"a": (Assignment(0, ""),), "b": spots(0, 1)}, "member a: task 0 has no node"),
        ({"a": spots(-1), "b": spots(0, 1)}, "member a: task index -1 is taken or invalid"),
        ({"a": spots(0), "b": spots(0, 1, 2)}, "member b: 3 tasks exceed desired 2"),
    ],
    ids=[
        "unknown-member",
        "short-gang",
        "member-left-out",
        "duplicate",
        "no-node",
        "negative",
        "too-many",
    ],
)
def test_a_gang_placement_that_does_not_fit_the_spec_is_refused(assignments, message):
    _, unit = waiting()
    assert refused(lambda: place_group(unit, assignments, 5)) == message
    assert unit.pending_events == []


def test_a_gang_placed_whole_waits_at_the_barrier_until_its_deadline():
    _, unit = waiting()
    place_group(unit, {"a": spots(0), "b": spots(0, 1)}, 7)
    assert event_kinds(unit) == ["MemberPlaced", "MemberPlaced", "GroupPlaced"]
    placed = unit.pending_events[-1]
    spec = unit.group.state.spec
    assert (placed.attempt, placed.barrier_deadline_ns) == (1, 7 + spec.barrier.timeout_ns)
    assert unit.group.state.status == "PLACED"


def test_a_gang_without_claims_is_released_at_once():
    spec = a_group().with_member("b", replicas=2).build()
    c = new_controller()
    c.submit(spec)
    unit = unit_of(c)
    place_group(unit, {"b": spots(0, 1)}, 7)
    assert event_kinds(unit)[-1] == "BarrierReleased"


def test_a_placed_group_cannot_be_placed_again():
    c, _ = waiting()
    c.apply_decisions([full_placement(c.group("g1").spec)])
    unit = unit_of(c)
    message = refused(
        lambda: place_group(unit, {"a": spots(0), "b": spots(0, 1)}, 5), IllegalTransition
    )
    assert message == "group g1 is PLACED: cannot place the group"


# --- holds -------------------------------------------------------------------------------


def test_the_first_hold_opens_the_reservation_and_later_ones_add_to_it():
    _, unit = waiting()
    timeout_ns = unit.group.state.spec.placement.timeout_ns
    hold_capacity(unit, {"b": spots(0)}, 11)
    assert event_kinds(unit) == ["ReservationOpened", "MemberHeld"]
    assert unit.pending_events[0].deadline_ns == 11 + timeout_ns
    assert unit.pending_events[0].attempt == 1
    hold_capacity(unit, {"a": spots(0), "b": spots(1)}, 12)
    assert event_kinds(unit) == ["ReservationOpened", "MemberHeld", "MemberHeld", "MemberHeld"]
    assert [a.index for a in unit.member("b").state.held] == [0, 1]
    assert unit.group.state.reservation_deadline_ns == 11 + timeout_ns


def test_holds_are_refused_in_atomic_mode_out_of_a_waiting_state_and_twice():
    _, atomic = waiting(reserve=False)
    assert refused(lambda: hold_capacity(atomic, {"b": spots(0)}, 5)) == (
        "group g1 is in atomic mode: it holds nothing"
    )
    _, unit = waiting()
    hold_capacity(unit, {"b": spots(0)}, 5)
    assert refused(lambda: hold_capacity(unit, {"b": spots(0)}, 6)) == (
        "member b: a task is held twice"
    )
    assert refused(lambda: hold_capacity(unit, {"b": spots(1, 2)}, 6)) == (
        "member b: 3 tasks exceed desired 2"
    )
    c, _ = waiting()
    c.apply_decisions([full_placement(c.group("g1").spec)])
    placed = unit_of(c)
    assert refused(lambda: hold_capacity(placed, {"b": spots(0)}, 5), IllegalTransition) == (
        "group g1 is PLACED: cannot hold capacity"
    )


# --- one member alone, after the start ---------------------------------------------------


def running_with_a_lost_replica():
    spec = (
        a_group()
        .with_member("a", tasks=1)
        .with_member("b", replicas=2, min_running=1)
        .with_rule("tolerate", members=("b",), reasons=("error",))
        .build()
    )
    c = running_controller(spec)
    state = c.world.member_named(c.group("g1"), "b")
    c.task_failed("g1/b", 1, state.attempt, "error", actor=_agent())
    return c


def _agent():
    from costart.domain.actors import Actor

    return Actor.agent("r1-n001")


def test_a_replica_placed_back_into_a_degraded_group_recovers_it():
    c = running_with_a_lost_replica()
    assert c.group("g1").status == "DEGRADED"
    unit = unit_of(c)
    place_member(unit, "b", spots(1, rack="r2"), 9)
    assert event_kinds(unit) == ["MemberPlaced", "GroupRecovered"]


def test_a_member_placed_alone_is_refused_in_the_words_of_its_state():
    c = running_with_a_lost_replica()
    unit = unit_of(c)
    assert refused(lambda: place_member(unit, "b", (), 9)) == "member b: nothing to place"
    assert refused(lambda: place_member(unit, "b", spots(0), 9)) == (
        "member b: task index 0 is taken or invalid"
    )
    assert refused(lambda: place_member(unit, "b", spots(1, 2), 9)) == (
        "member b: 3 tasks exceed desired 2"
    )
    assert refused(lambda: place_member(unit, "a", spots(1), 9), IllegalTransition) == (
        "member a is RUNNING: cannot place more tasks of a job"
    )
    assert unit.pending_events == []
    _, waiting_unit = waiting()
    assert refused(lambda: place_member(waiting_unit, "b", spots(0), 9), IllegalTransition) == (
        "group g1 is PENDING: cannot place a member alone"
    )


def test_a_started_group_with_a_member_still_placed_does_not_place_it_alone():
    spec = a_group().with_member("a", tasks=1).with_member("b", replicas=1).build()
    c = running_controller(spec)
    unit = unit_of(c)
    # A state commands never make (a started group's job back at PLACED), set by hand on
    # the live state: place_member must refuse it by its own check.
    unit.member("a").state.status = "PLACED"
    assert refused(lambda: place_member(unit, "a", spots(1), 9), IllegalTransition) == (
        "member a is PLACED: cannot place alone"
    )


def test_a_degraded_group_stays_degraded_until_every_member_is_whole():
    c = running_with_a_lost_replica()
    unit = unit_of(c)
    unit.member("b").state.desired = 3  # set by hand: one replica back is not enough
    place_member(unit, "b", spots(1, rack="r2"), 9)
    assert event_kinds(unit) == ["MemberPlaced"]


# --- release and pend reason -------------------------------------------------------------


def test_only_a_reserving_or_placed_group_is_released():
    _, unit = waiting()
    assert refused(lambda: release_group(unit, "x", 5), IllegalTransition) == (
        "group g1 is PENDING: cannot release"
    )
    hold_capacity(unit, {"b": spots(0)}, 5)
    release_group(unit, "preempted by g0", 6)
    assert unit.group.state.last_reason == "preempted by g0"
    assert unit.group.state.status == "PENDING"


def test_a_pend_reason_is_recorded_only_when_it_changes():
    _, unit = waiting()
    reason = PendReason(cls="capacity", message="b: 2x{gpu:1}; best has 1")
    assert set_pend_reason(unit, reason, 5) is True
    assert set_pend_reason(unit, reason, 6) is False
    assert event_kinds(unit) == ["PendReasonChanged"]


# --- deadlines ---------------------------------------------------------------------------


def test_a_reservation_times_out_at_its_deadline_and_not_before():
    _, unit = waiting()
    hold_capacity(unit, {"b": spots(0)}, 0)
    deadline = unit.group.state.reservation_deadline_ns
    assert not deadline_due(unit.group.state, deadline - 1)
    assert on_tick(unit, deadline - 1) is False
    assert deadline_due(unit.group.state, deadline)
    assert on_tick(unit, deadline) is True
    kinds = event_kinds(unit)
    assert kinds[2] == "ReservationTimedOut" and "PlacementReleased" in kinds[3:]
    assert unit.group.state.last_reason == "reservation timed out"


def test_a_barrier_times_out_at_its_deadline_and_not_before():
    _, unit = waiting()
    place_group(unit, {"a": spots(0), "b": spots(0, 1)}, 0)
    deadline = unit.group.state.barrier_deadline_ns
    assert not deadline_due(unit.group.state, deadline - 1)
    assert on_tick(unit, deadline - 1) is False
    assert deadline_due(unit.group.state, deadline)
    assert on_tick(unit, deadline) is True
    kinds = event_kinds(unit)
    assert kinds[3] == "BarrierTimedOut" and "PlacementReleased" in kinds[4:]
    assert unit.group.state.last_reason == "barrier timed out: claims not READY"


def test_a_waiting_group_has_no_deadline():
    _, unit = waiting()
    assert not deadline_due(unit.group.state, 10**18)
    assert on_tick(unit, 10**18) is False
    assert unit.pending_events == []


def test_a_timeout_on_the_last_allowed_attempt_fails_the_group():
    spec = (
        a_group()
        .with_member("a", claims=("gpus",))
        .reserve(timeout="15m")
        .with_placement(max_attempts=1)
        .build()
    )
    for step in ("reservation", "barrier"):
        c = new_controller()
        c.submit(spec)
        unit = unit_of(c)
        if step == "reservation":
            hold_capacity(unit, {"a": spots(0)}, 0)
            deadline = unit.group.state.reservation_deadline_ns
            why = "reservation timed out"
        else:
            place_group(unit, {"a": spots(0)}, 0)
            deadline = unit.group.state.barrier_deadline_ns
            why = "barrier timed out: claims not READY"
        assert on_tick(unit, deadline) is True
        failed = unit.pending_events[-1]
        assert (type(failed).__name__, failed.reason) == (
            "GroupFailed",
            f"{why}; gave up after 1 attempts",
        )


# --- when a group is due: wake_ns, and the plain scan over a World -----------------------

LIMITED = (
    a_group("limited")
    .with_member("slow", max_runtime="2h")
    .with_member("quick", max_runtime="1h")
    .with_member("free")
    .atomic()
    .build()
)
HOUR_NS = 3600 * SECOND_NS


def group_state(spec, status: str, **fields) -> GroupState:
    return GroupState(
        id=group_id(1, spec.name),
        version=1,
        name=spec.name,
        spec=spec,
        submission_seq=1,
        member_ids=(),
        status=status,
        **fields,
    )


@pytest.mark.parametrize(
    ("status", "fields", "wake"),
    [
        ("RESERVING", {"reservation_deadline_ns": 7}, 7),
        ("PLACED", {"barrier_deadline_ns": 9, "reservation_deadline_ns": 3}, 9),
        ("RUNNING", {"started_at_ns": 100}, 100 + HOUR_NS),  # the shortest limit
        ("DEGRADED", {"started_at_ns": 100}, 100 + HOUR_NS),
        ("RUNNING", {}, None),  # never started (not expected): nothing to count from
        # Started once, now waiting again after a restart: no member runs, no limit.
        ("PENDING", {"started_at_ns": 100}, None),
        ("PENDING", {"retry_at_ns": 50}, None),  # a backoff is the scheduler's, not a tick's
        ("SUCCEEDED", {"started_at_ns": 100}, None),
    ],
)
def test_a_group_is_due_from_its_wake_time_and_not_a_nanosecond_before(status, fields, wake):
    group = group_state(LIMITED, status, **fields)
    assert wake_ns(group) == wake
    if wake is None:
        assert not deadline_due(group, 10**18)
    else:
        assert (deadline_due(group, wake - 1), deadline_due(group, wake)) == (False, True)


def test_a_started_group_without_a_limit_has_no_wake_time():
    spec = a_group("free").with_member("a").atomic().build()
    assert wake_ns(group_state(spec, "RUNNING", started_at_ns=100)) is None


def test_the_plain_scan_names_the_due_live_groups_in_submission_order():
    c = new_controller()
    specs = {
        name: a_group(name).with_member("a", max_runtime="1h").reserve(timeout="15m").build()
        for name in ("holding", "waiting", "running", "late")
    }
    for spec in specs.values():
        c.submit(spec)
    holds = {"a": spots(0, rack="r9")}
    c.apply_decisions(
        [
            HoldCapacity("holding", holds),
            full_placement(specs["running"], rack="r2"),
            HoldCapacity("late", {"a": spots(0, rack="r3")}),
        ]
    )
    start_all(c, "running")
    world = c.world
    deadline = world.group_named("holding").reservation_deadline_ns
    started = world.group_named("running").started_at_ns
    assert deadline is not None and started is not None
    assert due_groups(world, deadline - 1) == []
    assert names(due_groups(world, deadline)) == ["holding", "late"]
    assert names(due_groups(world, started + HOUR_NS)) == ["holding", "running", "late"]
    c.cancel("holding", actor=USER)  # gone from the live set: never due again
    assert names(due_groups(c.world, 10**18)) == ["running", "late"]


def names(groups: list[GroupState]) -> list[str]:
    return [g.name for g in groups]


def start_all(c, group: str) -> None:
    for member in c.members(group):
        start(c, f"{group}/{member.name}")
