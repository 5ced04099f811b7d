"""A member's declared `max_runtime` is enforced by the timer tick: at the limit it fails
with reason ``max-runtime`` and its group's failure policy decides."""

from __future__ import annotations

from costart.domain import events as ev
from tests.builders import a_group, event_names, running_controller

SECOND_NS = 10**9


def test_a_member_is_stopped_when_it_has_run_for_its_limit_and_not_a_moment_before():
    spec = a_group("g1").with_member("train", tasks=2, max_runtime="90s").build()
    c = running_controller(spec)
    started = c.members("g1")[0].started_at_ns
    assert started is not None
    assert c.tick(started + 90 * SECOND_NS - 1) == []
    events = c.tick(started + 90 * SECOND_NS)
    failed = [e for e in events if isinstance(e, ev.MemberFailed)]
    assert [(e.reason, e.action) for e in failed] == [("max-runtime", "fail-group")]
    assert c.group("g1").status == "FAILED"
    assert c.tick(started + 200 * SECOND_NS) == []


def test_the_failure_policy_decides_and_a_limit_consumes_the_restart_budget():
    spec = (
        a_group("g1")
        .with_member("train", max_runtime="1m")
        .with_member("svc", replicas=1)
        .with_rule("restart-member", members=("train",), reasons=("max-runtime",), max_restarts=1)
        .build()
    )
    c = running_controller(spec)
    started = c.members("g1")[0].started_at_ns
    events = c.tick(started + 60 * SECOND_NS)
    assert event_names(events) == ["MemberFailed", "MemberRestarted"]
    restarted = next(e for e in events if isinstance(e, ev.MemberRestarted))
    assert restarted.counted and restarted.restarts == 1
    # Only the limited member: the service has none.
    assert c.members("g1")[1].status == "RUNNING"


def test_groups_without_a_limit_never_fire():
    spec = a_group("g1").with_member("train").build()
    c = running_controller(spec)
    assert c.tick(10**18) == []
    assert c.group("g1").status == "RUNNING"
