"""`World` on its own: a batch of events folds as one by one does, and what it refuses
(a cluster event out of order, an id it does not know) is named in the error."""

from __future__ import annotations

import uuid

import pytest

from costart.domain.errors import DomainError, NotFound
from costart.domain.events import MemberStopped, NodeStatusChanged, PendReason, PendReasonChanged
from costart.domain.ids import CLUSTER_ID, id_text
from costart.domain.lifecycle import submit
from costart.domain.world import World
from tests.builders import USER, a_group, apply_all, new_controller


def _node(version: int, status: str = "down") -> NodeStatusChanged:
    return NodeStatusChanged(
        originator_id=CLUSTER_ID,
        originator_version=version,
        group_id=CLUSTER_ID,
        at_ns=version,
        node="n1",
        status=status,  # type: ignore[arg-type]
    )


def test_a_batch_folds_in_order_as_one_event_at_a_time_does():
    spec = a_group().with_member("a").with_member("b", replicas=2).build()
    events = submit(World(), spec, 5).pending_events
    batch, single = World(), World()
    apply_all(batch, events)
    for event in events:
        single.apply(event)
    assert batch == single
    assert [m.name for m in batch.members_of(batch.group_named("g1"))] == ["a", "b"]


def test_a_cluster_event_out_of_order_is_refused_naming_both_versions():
    world = World()
    world.apply(_node(1))
    with pytest.raises(DomainError, match=r"^cluster event version 3; expected 2$"):
        world.apply(_node(3))
    with pytest.raises(DomainError, match=r"^cluster event version 1; expected 2$"):
        world.apply(_node(1, "up"))
    assert (world.cluster_version, world.node_status) == (1, {"n1": "down"})


def test_an_unknown_member_id_is_named_in_the_error():
    missing = uuid.UUID(int=7)
    with pytest.raises(DomainError, match=rf"^unknown member {missing}$"):
        World().member_by_id(missing)


def test_a_node_reported_up_that_was_up_already_changes_only_the_cluster_version():
    world = World()
    world.apply(_node(1, "up"))
    assert (world.cluster_version, world.node_status) == (1, {})
    world.apply(_node(2, "drained"))
    world.apply(_node(3, "up"))
    assert (world.cluster_version, world.node_status) == (3, {})


def test_a_member_the_group_does_not_have_is_named_in_the_error():
    world = World()
    apply_all(world, submit(world, a_group().with_member("a").build(), 5).pending_events)
    with pytest.raises(NotFound, match=r"^group 'g1' has no member 'b'$"):
        world.member_named(world.group_named("g1"), "b")


def test_a_name_whose_groups_all_ended_means_the_latest_of_them():
    c = new_controller()
    spec = a_group().with_member("a").build()
    for _ in range(3):
        c.submit(spec)
        c.cancel("g1", actor=USER)
    groups = list(c.world.groups_in_order())
    assert [g.status for g in groups] == ["CANCELLED"] * 3
    assert c.world.group_named("g1") is groups[2]


def test_events_the_fold_cannot_place_are_refused_naming_the_id():
    world = World()
    events = submit(world, a_group().with_member("a").build(), 5).pending_events
    submitted, created = events[0], events[1]
    with pytest.raises(DomainError, match=rf"^unknown group {submitted.originator_id}$"):
        world.apply(PendReasonChanged(**_header(submitted), reason=PendReason("capacity", "x")))
    with pytest.raises(DomainError, match=rf"^unknown member {created.originator_id}$"):
        world.apply(MemberStopped(**_header(created), reason="x"))
    apply_all(world, events)
    with pytest.raises(
        DomainError, match=rf"^group {id_text(submitted.originator_id)} submitted twice$"
    ):
        world.apply(submitted)
    with pytest.raises(
        DomainError, match=rf"^member {id_text(created.originator_id)} created twice$"
    ):
        world.apply(created)


def _header(event):
    return {
        "originator_id": event.originator_id,
        "originator_version": 2,
        "group_id": event.group_id,
        "at_ns": 6,
    }
