"""Table-driven tests of both state machines: every (state, event) pair is allowed or
refused exactly as docs/design.md §3.2 says, and a refused one changes nothing."""

from __future__ import annotations

import itertools

import pytest

from costart.domain import events as ev
from costart.domain.errors import DomainError, IllegalTransition
from costart.domain.states import GROUP_STATUSES, MEMBER_STATUSES
from costart.domain.transitions import GROUP_FROM, MEMBER_FROM, check_group, check_member
from costart.domain.world import World
from tests.builders import HOST, a_group, new_controller, start

GROUP_STATES = list(GROUP_STATUSES)
MEMBER_STATES = list(MEMBER_STATUSES)

GROUP_EXPECTED = {
    ev.ReservationOpened: {"PENDING"},
    ev.GroupPlaced: {"PENDING", "RESERVING"},
    ev.ReservationTimedOut: {"RESERVING"},
    ev.BarrierTimedOut: {"PLACED"},
    ev.PlacementReleased: {"RESERVING", "PLACED", "RUNNING", "DEGRADED"},
    ev.PendReasonChanged: {"PENDING", "RESERVING", "PLACED"},
    ev.BarrierReleased: {"PLACED"},
    ev.GroupDegraded: {"RUNNING", "DEGRADED"},
    ev.GroupRecovered: {"DEGRADED"},
    ev.GroupRestarted: {"RUNNING", "DEGRADED"},
    ev.GroupSucceeded: {"RUNNING", "DEGRADED"},
    ev.GroupFailed: {"PENDING", "RESERVING", "PLACED", "RUNNING", "DEGRADED"},
    ev.GroupCancelled: {"PENDING", "RESERVING", "PLACED", "RUNNING", "DEGRADED"},
}
MEMBER_EXPECTED = {
    ev.MemberHeld: {"PENDING", "HELD"},
    ev.HoldLent: {"HELD"},
    ev.MemberPlaced: {"PENDING", "HELD", "RESTARTING", "RUNNING"},
    ev.MemberReleased: set(MEMBER_STATES),
    ev.ClaimReady: {"PLACED", "RUNNING"},
    ev.ClaimFailed: {"PLACED", "READY", "RUNNING"},
    ev.MemberStarted: {"READY"},
    ev.TaskStarted: {"RUNNING"},
    ev.TaskSucceeded: {"RUNNING"},
    ev.MemberFailed: {"PLACED", "READY", "RUNNING"},
    ev.MemberRestarted: {"PLACED", "READY", "FAILED", "RUNNING"},
    ev.MemberScaled: {"PENDING", "HELD", "PLACED", "READY", "RUNNING", "RESTARTING"},
    ev.MemberSucceeded: {"RUNNING"},
    ev.MemberStopped: {"PENDING", "HELD", "PLACED", "READY", "RUNNING", "RESTARTING"},
}


def _states():
    controller = new_controller()
    controller.submit(a_group().with_member("a").build())
    world: World = controller.world
    group = controller.group("g1")
    return group, world.members_of(group)[0]


def test_tables_cover_every_non_creation_event():
    assert set(GROUP_EXPECTED) == set(GROUP_FROM)
    assert set(MEMBER_EXPECTED) == set(MEMBER_FROM)
    assert set(GROUP_FROM) | set(MEMBER_FROM) | {
        ev.GroupSubmitted,
        ev.MemberCreated,
        ev.NodeStatusChanged,
    } == set(ev.ALL_EVENTS)


@pytest.mark.parametrize(
    ("event_type", "state"), list(itertools.product(GROUP_EXPECTED, GROUP_STATES))
)
def test_group_transition(event_type, state):
    group, _ = _states()
    group.status = state
    if state in GROUP_EXPECTED[event_type]:
        check_group(group, event_type)
    else:
        with pytest.raises(IllegalTransition, match=f"group g1 is {state}"):
            check_group(group, event_type)


@pytest.mark.parametrize(
    ("event_type", "state"), list(itertools.product(MEMBER_EXPECTED, MEMBER_STATES))
)
def test_member_transition(event_type, state):
    _, member = _states()
    member.status = state
    if state in MEMBER_EXPECTED[event_type]:
        check_member(member, event_type)
    else:
        with pytest.raises(IllegalTransition, match=f"member a is {state}"):
            check_member(member, event_type)


def ready_at(controller, ref: str, claim: str, attempt: int):
    return controller.claim_ready(ref, claim, attempt, actor=HOST)


def test_refused_command_changes_nothing():
    controller = new_controller()
    controller.submit(a_group().with_member("a", claims=("c",)).build())
    before = controller.recorder.max_notification_id()
    version = controller.group("g1").version
    with pytest.raises(IllegalTransition):
        start(controller, "g1/a")
    with pytest.raises(DomainError, match="no placement attempt 1"):
        ready_at(controller, "g1/a", "c", attempt=1)
    assert controller.recorder.max_notification_id() == before
    assert controller.group("g1").version == version


def test_a_refused_transition_names_the_aggregate_its_state_and_the_event_it_refused():
    from costart.domain import events as ev
    from costart.domain.errors import IllegalTransition
    from costart.domain.transitions import check_group, check_member
    from tests.builders import a_group, new_controller

    c = new_controller()
    c.submit(a_group("g1").with_member("a").build())
    group = c.world.group_named("g1")
    (member,) = c.world.members_of(group)
    with pytest.raises(IllegalTransition) as refused:
        check_group(group, ev.BarrierReleased)
    assert (refused.value.what, refused.value.state, refused.value.command) == (
        "group g1",
        "PENDING",
        "BarrierReleased",
    )
    with pytest.raises(IllegalTransition) as refused:
        check_member(member, ev.MemberSucceeded)
    assert str(refused.value) == "member a is PENDING: cannot MemberSucceeded"
