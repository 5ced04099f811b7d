"""Direct tests of edges the mutation run found unguarded: who may start in a running
group, what a restarted member's claims do, what a group's end says, and node losses that
do not touch a group or take a whole replica set."""

from __future__ import annotations

import pytest

from costart.domain.decisions import HoldCapacity, PlaceMember
from costart.domain.errors import IllegalTransition
from costart.domain.events import Assignment
from tests.builders import (
    HOST,
    a_group,
    event_names,
    fail,
    full_placement,
    new_controller,
    ready,
    running_controller,
    start,
    succeed,
)


def restartable():
    return (
        a_group()
        .with_member("trainer", claims=("gpus",))
        .with_member("rs", replicas=2, min_start=2, min_running=1)
        .with_rule("restart-member", members=("trainer",), max_restarts=3)
        .build()
    )


def test_in_a_running_group_only_ready_or_running_members_may_start():
    c = running_controller(restartable())
    assert c.may_start("g1/trainer") and c.may_start("g1/rs")
    fail(c, "g1/trainer", "error", 1)
    assert c.members("g1")[0].status == "RESTARTING"
    assert not c.may_start("g1/trainer")
    with pytest.raises(
        IllegalTransition,
        match="member g1/trainer is RESTARTING: cannot start: no placed task",
    ):
        start(c, "g1/trainer")
    c.apply_decisions([PlaceMember("g1", "trainer", (Assignment(0, "again-1"),))])
    assert c.members("g1")[0].status == "PLACED" and not c.may_start("g1/trainer")
    # Its claim turning READY makes it startable; the group's barrier is not released again.
    assert event_names(ready(c, "g1/trainer", "gpus")) == ["ClaimReady"]
    assert c.may_start("g1/trainer")
    assert event_names(start(c, "g1/trainer")) == ["MemberStarted"]


def test_success_stops_the_services_saying_why():
    spec = a_group().with_member("job").with_member("rs", replicas=2).build()
    c = running_controller(spec)
    events = succeed(c, "g1/job")
    assert event_names(events) == [
        "TaskSucceeded",
        "MemberSucceeded",
        "MemberStopped",
        "GroupSucceeded",
    ]
    assert events[2].reason == "group succeeded"


def test_a_group_whose_every_job_failed_under_tolerate_fails():
    spec = (
        a_group()
        .with_member("a")
        .with_member("b")
        .with_member("rs", replicas=1)
        .with_failure(default="tolerate", max_group_restarts=0)
        .build()
    )
    c = running_controller(spec)
    fail(c, "g1/a", "error", 1)
    events = fail(c, "g1/b", "oom", 137)
    assert event_names(events) == ["MemberFailed", "GroupDegraded", "MemberStopped", "GroupFailed"]
    assert (events[-1].member, events[-1].reason) == (None, "every job failed")
    assert events[2].reason == "group failed: every job failed"
    assert events[-1].at_ns == events[0].at_ns


def test_losing_a_node_the_group_does_not_use_changes_nothing_of_it():
    spec = a_group("r").with_member("a", tasks=2).reserve(timeout="5m").build()
    c = new_controller()
    c.submit(spec)
    c.apply_decisions([HoldCapacity("r", {"a": (Assignment(0, "held-node"),)})])
    events = c.set_node_status("unrelated-node", "down", actor=HOST)
    assert event_names(events) == ["NodeStatusChanged"]
    assert c.group("r").status == "RESERVING"
    events = c.set_node_status("held-node", "down", actor=HOST)
    assert event_names(events) == ["NodeStatusChanged", "MemberReleased", "PlacementReleased"]
    assert c.group("r").status == "PENDING"


def test_losing_the_node_of_every_replica_fails_the_whole_member_once():
    spec = (
        a_group()
        .with_member("job")
        .with_member("rs", replicas=2, min_start=2, min_running=1)
        .with_rule("tolerate", members=("rs",))
        .build()
    )
    c = new_controller()
    c.submit(spec)
    placement = full_placement(spec)
    shared = (Assignment(0, "one-node"), Assignment(1, "one-node"))
    c.apply_decisions([type(placement)("g1", {**placement.assignments, "rs": shared})])
    start(c, "g1/job")
    start(c, "g1/rs")
    events = c.set_node_status("one-node", "down", actor=HOST)
    failed = [e for e in events if type(e).__name__ == "MemberFailed"]
    assert [(e.index, e.reason) for e in failed] == [(None, "node-lost")]
    assert event_names(events)[-1] == "GroupFailed"  # 0 replicas left, below min_running 1
