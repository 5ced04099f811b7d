"""Copy on write in a command's unit: the live states are never changed by a command,
and only the aggregates a command changes are copied."""

from __future__ import annotations

import pytest

from costart.domain import lifecycle
from costart.domain.actors import Actor
from costart.domain.aggregates import GroupUnit
from costart.domain.errors import IllegalTransition, NotFound
from costart.domain.events import MemberStarted, MemberStopped, PendReason, PendReasonChanged
from costart.eventlog.codec import canonical_encode
from tests.builders import a_group, full_placement, new_controller


def a_placed_group():
    spec = a_group().with_member("a").with_member("b", replicas=2).build()
    controller = new_controller()
    controller.submit(spec)
    controller.apply_decisions([full_placement(spec)])
    return controller


def test_a_unit_copies_only_the_aggregates_a_command_changes():
    controller = a_placed_group()
    group = controller.world.group_named("g1")
    live = controller.world.members_of(group)
    unit = GroupUnit(group, live)
    assert unit.group.state is group and [m.state for m in unit.members] == live

    unit.member("a").trigger(MemberStarted, 1)

    assert unit.member("a").state is not live[0]  # changed: a private copy
    assert unit.member("b").state is live[1]  # untouched: still the live one
    assert live[0].status == "READY" and unit.member("a").state.status == "RUNNING"


def test_a_refused_command_leaves_every_live_state_byte_identical():
    controller = a_placed_group()
    before = canonical_encode(controller.world)
    group = controller.world.group_named("g1")
    unit = GroupUnit(group, controller.world.members_of(group))
    unit.member("a").trigger(MemberStarted, 1)
    with pytest.raises(IllegalTransition):
        unit.member("a").trigger(MemberStarted, 2)  # already RUNNING in the unit
    assert canonical_encode(controller.world) == before


def test_a_member_reached_by_name_or_in_the_list_is_one_aggregate():
    # Member aggregates are made on first use: both paths must reach the same copy.
    controller = a_placed_group()
    group = controller.world.group_named("g1")
    live = controller.world.members_of(group)
    unit = GroupUnit(group, live)
    unit.member("b").trigger(MemberStarted, 1)  # made by name, before the list
    assert unit.members[1] is unit.member("b")
    assert unit.members[1].state.status == "RUNNING"
    assert [m.name for m in unit.members] == ["a", "b"]
    assert [e.originator_id for e in unit.pending_events] == [live[1].id]


def test_a_submitted_unit_changes_the_states_it_created_in_place_and_stamps_its_sender():
    # States a command created are its own: no copy before their first change.
    world = new_controller().world
    spec = a_group().with_member("a").with_member("b", replicas=2).build()
    sender = Actor.user("bob")
    unit = lifecycle.submit(world, spec, 5, sender)
    group, members = unit.group.state, [m.state for m in unit.members]
    assert [m.spec.name for m in members] == ["a", "b"]
    assert all(m.status == "PENDING" and m.group_id == group.id for m in members)

    reason = PendReason(cls="capacity", message="a: 1x{gpu:1}; none free")
    pended = unit.group.trigger(PendReasonChanged, 6, reason=reason)
    stopped = unit.member("b").trigger(MemberStopped, 6, reason="test")

    assert unit.group.state is group and group.pend_reason == reason
    assert [m.state for m in unit.members] == members and unit.members[1].state is members[1]
    assert members[1].status == "STOPPED"
    assert (pended.actor, stopped.actor) == (sender, sender)
    assert unit.actor == sender


def test_a_member_the_group_does_not_have_is_named_in_the_error():
    controller = a_placed_group()
    group = controller.world.group_named("g1")
    unit = GroupUnit(group, controller.world.members_of(group))
    with pytest.raises(NotFound, match=r"^group 'g1' has no member 'c'$"):
        unit.member("c")
