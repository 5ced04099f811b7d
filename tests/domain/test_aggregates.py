"""Copy on write in a command's unit: the live states are never changed by a command,
and only the aggregates a command changes are copied."""

from __future__ import annotations

import pytest

from costart.domain.aggregates import GroupUnit
from costart.domain.errors import IllegalTransition
from costart.domain.events import MemberStarted
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
