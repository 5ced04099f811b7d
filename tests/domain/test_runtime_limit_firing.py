"""`fire_runtime_limits` on its own: each running member is judged by its own start and
its own limit (the group-wide "may be due" test only says when to look), members without
a limit or not running are passed over without ending the scan, and the result says
whether anything was recorded."""

from __future__ import annotations

from costart.domain import events as ev
from costart.domain.aggregates import GroupUnit
from costart.domain.runtime_limits import fire_runtime_limits, runtime_limit_may_be_due
from tests.builders import a_group, running_controller, succeed

SECOND_NS = 10**9


def _unit(c, name="g1"):
    group = c.group(name)
    return GroupUnit(group, c.world.members_of(group))


def _failed(unit):
    """(reason, member name) of each failure the unit recorded."""
    names = {m.id: m.name for m in unit.members}
    return [
        (e.reason, names[e.originator_id])
        for e in unit.pending_events
        if isinstance(e, ev.MemberFailed)
    ]


def test_each_member_is_judged_by_its_own_limit_not_the_groups_shortest():
    spec = (
        a_group()
        .with_member("short", max_runtime="60s")
        .with_member("long", max_runtime="90s")
        .with_failure(default="tolerate")
        .build()
    )
    c = running_controller(spec)
    started = c.members("g1")[0].started_at_ns
    assert started is not None and c.members("g1")[1].started_at_ns == started
    at = started + 60 * SECOND_NS
    assert runtime_limit_may_be_due(c.group("g1"), at)
    unit = _unit(c)
    assert fire_runtime_limits(unit, at) is True
    assert _failed(unit) == [("max-runtime", "short")]
    assert unit.member("long").state.status == "RUNNING"


def test_nothing_due_yet_records_nothing_and_says_so():
    spec = a_group().with_member("a", max_runtime="60s").with_member("b", max_runtime="60s").build()
    c = running_controller(spec)
    started = c.members("g1")[0].started_at_ns
    unit = _unit(c)
    assert fire_runtime_limits(unit, started + 60 * SECOND_NS - 1) is False
    assert unit.pending_events == []


def test_a_member_without_a_limit_does_not_end_the_scan():
    spec = (
        a_group()
        .with_member("svc", replicas=1)
        .with_member("train", max_runtime="60s")
        .with_failure(default="tolerate")
        .build()
    )
    c = running_controller(spec)
    started = c.members("g1")[1].started_at_ns
    unit = _unit(c)
    assert fire_runtime_limits(unit, started + 60 * SECOND_NS) is True
    assert _failed(unit) == [("max-runtime", "train")]


def test_a_member_that_already_ended_is_not_failed_by_its_limit():
    spec = (
        a_group()
        .with_member("done", max_runtime="60s")
        .with_member("train", max_runtime="60s")
        .with_failure(default="tolerate")
        .build()
    )
    c = running_controller(spec)
    started = c.members("g1")[0].started_at_ns
    succeed(c, "g1/done")
    assert c.members("g1")[0].status == "SUCCEEDED"
    assert c.members("g1")[0].started_at_ns is not None
    unit = _unit(c)
    assert fire_runtime_limits(unit, started + 60 * SECOND_NS) is True
    assert _failed(unit) == [("max-runtime", "train")]
