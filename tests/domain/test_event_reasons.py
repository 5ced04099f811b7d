"""What the log says when an attempt or a group ends: each event with its exact reason,
deadline and counters, as an incident responder reads them back (docs/design.md §3.3, §5)."""

from __future__ import annotations

from typing import Any

from costart.domain import limits
from tests.builders import (
    HOST,
    SECOND_NS,
    ManualClock,
    a_group,
    claim_fail,
    fail,
    full_placement,
    new_controller,
    running_controller,
)

SKIP = {"originator_id", "group_id", "originator_version", "actor", "spec", "note", "at_ns"}


def story(events: list[Any]) -> list[tuple[str, dict[str, Any]]]:
    return [
        (type(e).__name__, {k: getattr(e, k) for k in e.__struct_fields__ if k not in SKIP})
        for e in events
    ]


def claims_group(**placement: Any):
    return (
        a_group("g1")
        .with_member("a", claims=("gpus",))
        .with_member("b")
        .with_placement(backoff="10s", backoff_max="25s", **placement)
        .build()
    )


def test_a_failed_claim_before_the_start_releases_the_gang_and_backs_off():
    spec = claims_group()
    clock = ManualClock(10 * SECOND_NS)
    c = new_controller(clock)
    c.submit(spec)
    c.apply_decisions([full_placement(spec)])
    long_reason = "x" * (limits.MAX_REASON_TEXT + 88)
    released = "claim a/gpus failed"
    assert story(claim_fail(c, "g1/a", "gpus", long_reason)) == [
        (
            "ClaimFailed",
            {
                "claim": "gpus",
                "reason": "x" * limits.MAX_REASON_TEXT,
                "attempt": 1,
                "key": None,
                "task": None,
            },
        ),
        ("MemberReleased", {"reason": released}),
        ("MemberReleased", {"reason": released}),
        ("PlacementReleased", {"reason": released, "retry_at_ns": 20 * SECOND_NS}),
    ]


def test_backoff_doubles_per_release_up_to_its_cap():
    spec = claims_group()
    clock = ManualClock(0)
    c = new_controller(clock)
    c.submit(spec)
    delays = []
    for _ in range(4):
        c.apply_decisions([full_placement(spec)])
        released = claim_fail(c, "g1/a", "gpus", "bad")[-1]
        delays.append((released.retry_at_ns - clock.now_ns) // SECOND_NS)
        clock.advance(100)
    assert delays == [10, 20, 25, 25]


def test_placement_gives_up_after_its_attempts_and_fails_the_group_saying_so():
    spec = claims_group(max_attempts=2)
    clock = ManualClock(0)
    c = new_controller(clock)
    c.submit(spec)
    c.apply_decisions([full_placement(spec)])
    assert story(claim_fail(c, "g1/a", "gpus", "bad"))[-1][0] == "PlacementReleased"
    clock.advance(100)
    c.apply_decisions([full_placement(spec)])
    gave_up = "claim a/gpus failed; gave up after 2 attempts"
    assert story(claim_fail(c, "g1/a", "gpus", "bad"))[1:] == [
        ("MemberStopped", {"reason": f"group failed: {gave_up}"}),
        ("MemberStopped", {"reason": f"group failed: {gave_up}"}),
        ("GroupFailed", {"member": None, "reason": gave_up}),
    ]


def test_a_node_lost_before_the_start_releases_without_counting_an_attempt():
    spec = claims_group(max_attempts=1)
    c = new_controller(ManualClock(0))
    c.submit(spec)
    c.apply_decisions([full_placement(spec)])
    lost = "node r1-n001 lost"
    assert story(c.set_node_status("r1-n001", "down", actor=HOST))[1:] == [
        ("MemberReleased", {"reason": lost}),
        ("MemberReleased", {"reason": lost}),
        ("PlacementReleased", {"reason": lost, "retry_at_ns": 10 * SECOND_NS}),
    ]
    assert c.group("g1").status == "PENDING"


def test_a_restart_group_says_which_member_failed_and_starts_a_new_attempt():
    spec = (
        a_group("g3")
        .with_member("a")
        .with_member("b")
        .with_rule("restart-group")
        .with_failure(max_group_restarts=1)
        .build()
    )
    c = running_controller(spec)
    after = "restart-group after a failed"
    assert story(fail(c, "g3/a", "error", exit_code=3)) == [
        (
            "MemberFailed",
            {
                "reason": "error",
                "exit_code": 3,
                "action": "restart-group",
                "index": 0,
                "attempt": 1,
                "key": None,
            },
        ),
        ("GroupRestarted", {"attempt": 2, "restarts": 1, "member": "a", "reason": "error"}),
        ("MemberReleased", {"reason": after}),
        ("MemberReleased", {"reason": after}),
        ("PlacementReleased", {"reason": after, "retry_at_ns": 60 * SECOND_NS}),
    ]


def test_a_failed_group_names_the_member_and_the_reason_and_stops_the_rest():
    c = running_controller(a_group("g4").with_member("a").with_member("b").build())
    assert story(fail(c, "g4/a", "oom", exit_code=137))[1:] == [
        ("MemberStopped", {"reason": "group failed: a failed: oom"}),
        ("GroupFailed", {"member": "a", "reason": "a failed: oom"}),
    ]


def test_a_claim_failure_records_the_reports_key_and_attempt():
    spec = claims_group()
    c = new_controller(ManualClock(0))
    c.submit(spec)
    c.apply_decisions([full_placement(spec)])
    report = c.claim_failed("g1/a", "gpus", 1, "driver said no", actor=HOST, key="k-17")
    failed = report.events[0]
    assert (type(failed).__name__, failed.key, failed.attempt, failed.reason) == (
        "ClaimFailed",
        "k-17",
        1,
        "driver said no",
    )


def test_a_task_claim_failing_after_the_start_fails_that_task_of_that_attempt():
    spec = (
        a_group("g5")
        .with_member("a", tasks=2, task_claims=("dev",))
        .with_rule("restart-member", reasons=("claim-failed",), max_restarts=3)
        .build()
    )
    c = new_controller(ManualClock(0))
    c.submit(spec)
    c.apply_decisions([full_placement(spec)])
    for task in (0, 1):
        c.claim_ready("g5/a", "dev", 1, task=task, actor=HOST)
    c.task_started("g5/a", 0, 1, actor=HOST)
    assert c.group("g5").status == "RUNNING"
    events = c.claim_failed("g5/a", "dev", 1, "device gone", task=1, actor=HOST).events
    assert story(events)[:2] == [
        (
            "ClaimFailed",
            {"claim": "dev", "reason": "device gone", "attempt": 1, "key": None, "task": 1},
        ),
        (
            "MemberFailed",
            {
                "reason": "claim-failed",
                "exit_code": None,
                "action": "restart-member",
                "index": 1,
                "attempt": 1,
                "key": None,
            },
        ),
    ]


def two_on_one_node(spec, node_of: dict[str, tuple[str, ...]]):
    """A running controller whose members' tasks sit on the nodes given (by index)."""
    from costart.domain.decisions import PlaceGroup
    from costart.domain.events import Assignment
    from tests.builders import start

    c = new_controller(ManualClock(0))
    c.submit(spec)
    placed = {
        m: tuple(Assignment(i, n) for i, n in enumerate(nodes)) for m, nodes in node_of.items()
    }
    c.apply_decisions([PlaceGroup(spec.name, placed)])
    for member in node_of:
        start(c, f"{spec.name}/{member}")
    assert c.group(spec.name).status == "RUNNING"
    return c


def test_a_job_losing_several_tasks_on_one_node_fails_once_by_its_first_task():
    spec = a_group("g6").with_member("j", tasks=3).with_rule("tolerate").build()
    c = two_on_one_node(spec, {"j": ("n1", "n1", "n2")})
    failed = [
        e for e in c.set_node_status("n1", "down", actor=HOST) if type(e).__name__ == "MemberFailed"
    ]
    assert [(e.reason, e.index) for e in failed] == [("node-lost", 0)]


def test_a_job_losing_its_only_task_fails_by_that_task():
    spec = a_group("g7").with_member("j").with_member("k").with_rule("tolerate").build()
    c = two_on_one_node(spec, {"j": ("n1",), "k": ("n2",)})
    failed = [
        e for e in c.set_node_status("n1", "down", actor=HOST) if type(e).__name__ == "MemberFailed"
    ]
    assert [(e.reason, e.index) for e in failed] == [("node-lost", 0)]


def test_a_node_loss_that_fails_the_group_midway_is_still_written_whole():
    spec = a_group("g8").with_member("rs", replicas=3).build()  # default: fail-group
    c = two_on_one_node(spec, {"rs": ("n1", "n1", "n2")})
    written = story(c.set_node_status("n1", "down", actor=HOST))
    assert [kind for kind, _ in written] == [
        "NodeStatusChanged",
        "MemberFailed",
        "MemberStopped",
        "GroupFailed",
    ]
    assert written[1][1]["index"] == 0
    assert c.group("g8").status == "FAILED"


def test_a_task_failure_records_the_reports_key():
    c = running_controller(a_group("g9").with_member("a").with_rule("tolerate").build())
    events = c.task_failed("g9/a", 0, 1, "error", exit_code=2, actor=HOST, key="k-9").events
    failed = next(e for e in events if type(e).__name__ == "MemberFailed")
    assert (failed.key, failed.exit_code, failed.attempt, failed.index) == ("k-9", 2, 1, 0)


def test_a_restart_group_has_its_own_budget_not_the_placement_attempts():
    spec = (
        a_group("g10")
        .with_member("a")
        .with_rule("restart-group")
        .with_failure(max_group_restarts=1)
        .with_placement(max_attempts=1)
        .build()
    )
    c = running_controller(spec)
    written = [type(e).__name__ for e in fail(c, "g10/a", "error")]
    assert written[-1] == "PlacementReleased"
    assert "GroupFailed" not in written
    assert (c.group("g10").status, c.group("g10").attempt) == ("PENDING", 2)
