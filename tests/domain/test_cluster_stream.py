"""The cluster's event stream (`ClusterUnit`): a node report is recorded only when it
changes the node's status, versioned after the world's last cluster event, and a report
without a node is refused in words."""

from __future__ import annotations

import pytest

from costart.domain import events as ev
from costart.domain.actors import Actor
from costart.domain.cluster_stream import ClusterUnit
from costart.domain.errors import DomainError
from costart.domain.ids import CLUSTER_ID
from costart.domain.world import World

HOST = Actor.host("h")


def test_a_change_is_recorded_after_the_worlds_last_cluster_event():
    world = World()
    world.cluster_version = 4
    unit = ClusterUnit(world, HOST)
    assert unit.report("up", "n1", "down", 9, note="why") is True
    assert unit.report("down", "n1", "up", 10) is True
    assert unit.version == 6
    (first, second) = unit.pending_events
    assert first == ev.NodeStatusChanged(
        originator_id=CLUSTER_ID,
        originator_version=5,
        group_id=CLUSTER_ID,
        at_ns=9,
        actor=HOST,
        note="why",
        node="n1",
        status="down",
    )
    assert (second.originator_version, second.status, second.note) == (6, "up", None)
    assert unit.collect_events() == [first, second]
    assert unit.pending_events == []


@pytest.mark.parametrize("status", ["up", "down", "drained"])
def test_a_report_of_the_status_a_node_has_already_records_nothing(status):
    unit = ClusterUnit(World(), HOST)
    assert unit.report(status, "n1", status, 9) is False
    assert (unit.pending_events, unit.version) == ([], 0)


def test_a_report_without_a_node_is_refused_in_words():
    unit = ClusterUnit(World(), HOST)
    with pytest.raises(DomainError) as raised:
        unit.report("up", "", "down", 9)
    assert str(raised.value) == "a node report needs a node name"
    assert unit.pending_events == []
