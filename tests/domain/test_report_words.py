"""Every verdict and every refusal of a host report (`costart.domain.reports`), word for
word: an agent or a claim driver reads these to know why its report changed nothing, so
each says which task, which attempt and what the state is instead."""

from __future__ import annotations

import pytest

from costart.domain import limits
from costart.domain.actors import Actor
from costart.domain.decisions import PlaceMember
from costart.domain.errors import DomainError, IllegalTransition
from costart.domain.events import Assignment
from tests.builders import HOST, a_group, full_placement, new_controller, ready, start

AGENT = Actor.agent("r1-n001")


def placed(task_claims: tuple[str, ...] = ()):
    """A two-task job ``trainer`` (claim gpus) and a two-replica ``svc``, placed whole."""
    spec = (
        a_group()
        .with_member("trainer", tasks=2, claims=("gpus",), task_claims=task_claims)
        .with_member("svc", replicas=3)
        .with_rule("restart-member", members=("trainer", "svc"), reasons=("error",), max_restarts=3)
        .build()
    )
    c = new_controller()
    c.submit(spec)
    c.apply_decisions([full_placement(spec)])
    return c


def running():
    c = placed()
    ready(c, "g1/trainer", "gpus")
    start(c, "g1/trainer")
    start(c, "g1/svc")
    return c


def said(report) -> tuple[str, str]:
    assert report.events == ()
    return (report.outcome, report.detail)


def refused(call, kind: type[DomainError] = DomainError) -> str:
    with pytest.raises(kind) as caught:
        call()
    return str(caught.value)


# --- keys and attempts -------------------------------------------------------------------


def test_a_report_key_at_the_limit_is_taken_and_one_past_it_or_oddly_spelled_is_refused():
    c = running()
    longest = "k" * limits.MAX_REPORT_KEY
    assert c.task_succeeded("g1/trainer", 0, 1, actor=AGENT, key=longest).outcome == "applied"
    words = (
        f"report key {{!r}}: 1 to {limits.MAX_REPORT_KEY} characters of letters, digits and ._:/-"
    )
    for key in ("k" * (limits.MAX_REPORT_KEY + 1), "", "a b", "é"):
        message = refused(lambda k=key: c.task_succeeded("g1/trainer", 1, 1, actor=AGENT, key=k))
        assert message == words.format(key)
    assert c.task_succeeded("g1/trainer", 1, 1, actor=AGENT, key="A-z_0.9:/x").outcome == "applied"


def test_a_report_about_an_attempt_never_made_names_the_latest():
    c = running()
    for attempt in (0, 2, -1):
        message = refused(lambda a=attempt: c.task_started("g1/trainer", 0, a, actor=AGENT))
        assert message == f"member trainer has no placement attempt {attempt} (its latest is 1)"


def test_a_report_about_a_member_never_placed_says_so():
    spec = a_group().with_member("trainer", tasks=2, claims=("gpus",)).build()
    c = new_controller()
    c.submit(spec)
    message = refused(lambda: c.claim_ready("g1/trainer", "gpus", 1, actor=HOST))
    assert message == "member trainer has no placement attempt 1 (it was never placed)"


# --- tasks -------------------------------------------------------------------------------


def test_task_reports_say_when_they_repeat_come_late_or_cannot_be():
    c = running()
    assert said(c.task_started("g1/trainer", 0, 1, actor=AGENT)) == (
        "repeated",
        "task 0 of attempt 1 is RUNNING already",
    )
    assert refused(lambda: c.task_started("g1/trainer", 5, 1, actor=AGENT)) == (
        "member trainer has no task 5 in attempt 1"
    )
    assert refused(lambda: c.task_succeeded("g1/svc", 0, 1, actor=AGENT)) == (
        "member svc is a replica-set; only a job's tasks succeed"
    )
    c.task_succeeded("g1/trainer", 0, 1, actor=AGENT)
    assert said(c.task_succeeded("g1/trainer", 0, 1, actor=AGENT)) == (
        "repeated",
        "task 0 of attempt 1 is SUCCEEDED already",
    )
    assert said(c.task_started("g1/trainer", 0, 1, actor=AGENT)) == (
        "stale",
        "task 0 of attempt 1 ended SUCCEEDED",
    )
    assert said(c.task_failed("g1/trainer", 0, 1, "error", actor=AGENT)) == (
        "stale",
        "task 0 of attempt 1 ended SUCCEEDED",
    )


def test_a_failed_task_reported_failed_again_is_a_repeat():
    c = running()
    c.task_failed("g1/svc", 2, 1, "error", actor=AGENT)
    assert said(c.task_failed("g1/svc", 2, 1, "error", actor=AGENT)) == (
        "repeated",
        "task 2 of attempt 1 is FAILED already",
    )


def test_a_task_cannot_succeed_before_it_started():
    c = placed()
    ready(c, "g1/trainer", "gpus")
    message = refused(lambda: c.task_succeeded("g1/trainer", 1, 1, actor=AGENT), IllegalTransition)
    assert message == "task trainer/1 is PLACED: cannot succeed before it started"


def test_a_task_cannot_start_before_the_barrier():
    c = placed(task_claims=("device",))
    message = refused(lambda: c.task_started("g1/svc", 0, 1, actor=AGENT), IllegalTransition)
    assert message == "member svc is READY: cannot start a task before the barrier is released"


def test_a_replica_placed_alone_cannot_start_before_its_own_claims():
    spec = (
        a_group()
        .with_member("svc", replicas=2, task_claims=("device", "nic"))
        .with_rule("restart-member", members=("svc",), reasons=("error",), max_restarts=2)
        .build()
    )
    c = new_controller()
    c.submit(spec)
    c.apply_decisions([full_placement(spec)])
    for task in (0, 1):
        for claim in ("device", "nic"):
            c.claim_ready("g1/svc", claim, 1, task=task, actor=HOST)
    start(c, "g1/svc")
    c.task_failed("g1/svc", 1, 1, "error", actor=AGENT)
    c.apply_decisions([PlaceMember("g1", "svc", (Assignment(1, "r9-n001"),))])
    c.claim_ready("g1/svc", "nic", 2, task=1, actor=HOST)
    message = refused(lambda: c.task_started("g1/svc", 1, 2, actor=AGENT), IllegalTransition)
    assert message == "task svc/1 is PLACED: cannot start before its claims ['device'] are READY"


def test_reports_about_replicas_placed_again_are_stale_or_refused_by_attempt():
    c = running()
    c.task_failed("g1/svc", 1, 1, "error", actor=AGENT)
    c.apply_decisions([PlaceMember("g1", "svc", (Assignment(1, "r3-n001"),))])
    assert said(c.task_started("g1/svc", 1, 1, actor=AGENT)) == (
        "stale",
        "task 1 was placed again by attempt 2 (report: 1)",
    )
    assert refused(lambda: c.task_started("g1/svc", 0, 2, actor=AGENT)) == (
        "member svc: task 0 was placed by attempt 1, not 2"
    )
    assert said(c.task_failed("g1/svc", 7, 1, "error", actor=AGENT)) == (
        "stale",
        "task 7 of attempt 1 is gone",
    )
    assert refused(lambda: c.task_failed("g1/svc", 7, 2, "error", actor=AGENT)) == (
        "member svc has no task 7 in attempt 2"
    )


# --- claims ------------------------------------------------------------------------------


def test_claim_reports_say_when_they_repeat_or_come_late():
    c = placed()
    assert refused(lambda: c.claim_ready("g1/trainer", "disk", 1, actor=HOST)) == (
        "member trainer has no claim 'disk'"
    )
    ready(c, "g1/trainer", "gpus")
    assert said(c.claim_ready("g1/trainer", "gpus", 1, actor=HOST)) == (
        "repeated",
        "claim gpus of attempt 1 is READY already",
    )
    start(c, "g1/trainer")
    assert said(c.claim_failed("g1/trainer", "gpus", 1, "driver", actor=HOST)) == (
        "stale",
        "claim gpus of attempt 1: the member started since",
    )


def test_a_failed_claim_is_a_repeat_to_fail_and_stale_to_ready():
    c = placed(task_claims=("device",))
    c.claim_failed("g1/trainer", "device", 1, "ecc", task=0, actor=HOST)
    # The group was released: the member is PENDING, so every claim of attempt 1 is late.
    assert said(c.claim_ready("g1/trainer", "gpus", 1, actor=HOST)) == (
        "stale",
        "claim gpus of attempt 1: the member is PENDING since",
    )
    assert said(c.claim_ready("g1/trainer", "device", 1, task=1, actor=HOST)) == (
        "stale",
        "claim device of task 1: the task is STOPPED",
    )


def test_a_member_claim_failed_twice_is_a_repeat_and_ready_after_it_is_stale():
    spec = (
        a_group()
        .with_member("trainer", tasks=1, claims=("gpus", "disk"))
        .with_member("svc", replicas=1)
        .build()
    )
    c = new_controller()
    c.submit(spec)
    c.apply_decisions([full_placement(spec)])
    trainer = c.world.member_named(c.group("g1"), "trainer")
    # A member claim FAILED while the member stays placed: commands never leave this state
    # (a failed claim releases the group, or fails the member, at once), but the fold
    # allows it, so the verdicts guard it; the state is set by hand.
    trainer.claims = {**trainer.claims, "gpus": "FAILED"}
    assert said(c.claim_failed("g1/trainer", "gpus", 1, "again", actor=HOST)) == (
        "repeated",
        "claim gpus of attempt 1 FAILED already",
    )
    assert said(c.claim_ready("g1/trainer", "gpus", 1, actor=HOST)) == (
        "stale",
        "claim gpus of attempt 1 FAILED already",
    )


def test_claim_reports_about_an_earlier_placement_or_a_missing_task_claim():
    c = running()
    c.task_failed("g1/trainer", 0, 1, "error", actor=AGENT)
    c.apply_decisions(
        [PlaceMember("g1", "trainer", (Assignment(0, "r2-n000"), Assignment(1, "r2-n001")))]
    )
    assert said(c.claim_ready("g1/trainer", "gpus", 1, actor=HOST)) == (
        "stale",
        "claim gpus of attempt 1: the member was placed again",
    )
    assert refused(lambda: c.claim_ready("g1/trainer", "gpus", 2, task=0, actor=HOST)) == (
        "task 0 of member trainer has no claim 'gpus'"
    )
    assert said(c.claim_ready("g1/trainer", "gpus", 1, task=0, actor=HOST)) == (
        "stale",
        "task 0 was placed again by attempt 2 (report: 1)",
    )


def test_a_start_carries_its_report_key_into_the_log():
    c = placed()
    ready(c, "g1/trainer", "gpus")
    first = c.task_started("g1/trainer", 0, 1, actor=AGENT, key="start-0")
    second = c.task_started("g1/trainer", 1, 1, actor=AGENT, key="start-1")
    assert [(type(e).__name__, e.task, e.attempt, e.key) for e in first.events + second.events] == [
        ("MemberStarted", 0, 1, "start-0"),
        ("TaskStarted", 1, 1, "start-1"),
    ]


def test_claim_reports_carry_their_key_into_the_log():
    c = placed(task_claims=("device",))
    ready_report = c.claim_ready("g1/trainer", "gpus", 1, actor=HOST, key="gpus-ok")
    failed_report = c.claim_failed("g1/trainer", "device", 1, "ecc", task=1, actor=HOST, key="ecc")
    assert [(e.claim, e.task, e.attempt, e.key) for e in ready_report.events] == [
        ("gpus", None, 1, "gpus-ok")
    ]
    first = failed_report.events[0]
    assert (type(first).__name__, first.claim, first.task, first.key) == (
        "ClaimFailed",
        "device",
        1,
        "ecc",
    )
