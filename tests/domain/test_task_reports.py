"""Per-task state and attempt-stamped reports (docs/design.md §8): a job succeeds when all its
tasks have, one task's failure is the job's, a replica set runs its running tasks, and a
late, repeated or foreign report changes nothing and says so."""

from __future__ import annotations

import pytest

from costart.domain.actors import Actor
from costart.domain.decisions import PlaceMember
from costart.domain.errors import DomainError, IllegalTransition
from costart.domain.events import Assignment
from costart.domain.invariants import check_world
from costart.domain.states import NO_TASK_CLAIMS
from costart.eventlog.codec import canonical_encode
from costart.replay.rebuild import rebuild
from costart.replay.source import RecorderSource
from tests.builders import (
    HOST,
    a_group,
    event_names,
    full_placement,
    new_controller,
    ready,
    start,
)

AGENT = Actor.agent("r1-n001")


def trainer_and_services():
    """A four-task trainer job and a two-replica service under ``all-jobs``."""
    return (
        a_group()
        .with_member("trainer", tasks=4, claims=("gpus",))
        .with_member("svc", replicas=2)
        .with_rule("restart-member", members=("trainer", "svc"), reasons=("error",), max_restarts=3)
        .build()
    )


def started():
    spec = trainer_and_services()
    c = new_controller()
    c.submit(spec)
    c.apply_decisions([full_placement(spec)])
    ready(c, "g1/trainer", "gpus")
    start(c, "g1/trainer")
    start(c, "g1/svc")
    return c


def test_a_job_succeeds_only_when_every_one_of_its_tasks_has():
    c = started()
    for task in range(3):
        report = c.task_succeeded("g1/trainer", task, 1, actor=AGENT)
        assert event_names(list(report.events)) == ["TaskSucceeded"]
        assert c.members("g1")[0].status == "RUNNING"
        assert c.members("g1")[1].status == "RUNNING"  # all-jobs has not stopped services
    report = c.task_succeeded("g1/trainer", 3, 1, actor=AGENT)
    assert event_names(list(report.events)) == [
        "TaskSucceeded",
        "MemberSucceeded",
        "MemberStopped",
        "GroupSucceeded",
    ]
    trainer = c.members("g1")[0]
    assert [t.status for t in trainer.tasks] == ["SUCCEEDED"] * 4
    check_world(c.world)


def test_one_tasks_failure_is_the_jobs_failure_under_the_policy():
    c = started()
    report = c.task_failed("g1/trainer", 2, 1, "error", exit_code=3, actor=AGENT)
    assert event_names(list(report.events)) == ["MemberFailed", "MemberRestarted"]
    trainer = c.members("g1")[0]
    assert trainer.status == "RESTARTING"
    assert [t.status for t in trainer.tasks] == ["STOPPED", "STOPPED", "FAILED", "STOPPED"]
    assert trainer.tasks[2].exit_code == 3
    check_world(c.world)


def test_a_replica_sets_running_count_is_its_running_tasks():
    spec = a_group().with_member("svc", replicas=3).with_member("t").build()
    c = new_controller()
    c.submit(spec)
    c.apply_decisions([full_placement(spec)])
    svc = c.members("g1")[0]
    assert svc.running_tasks == 0 and svc.status == "READY"
    report = c.task_started("g1/svc", 1, 1, actor=AGENT)
    assert event_names(list(report.events)) == ["MemberStarted"]
    assert c.members("g1")[0].running_tasks == 1
    report = c.task_started("g1/svc", 0, 1, actor=AGENT)
    assert event_names(list(report.events)) == ["TaskStarted"]
    assert c.members("g1")[0].running_tasks == 2
    check_world(c.world)


def test_a_late_exit_report_about_the_previous_attempt_changes_nothing():
    """The issue's case: after a restart, an exit report about a task of the previous
    attempt must not fail the restarted member."""
    c = started()
    c.task_failed("g1/trainer", 0, 1, "error", actor=AGENT)
    c.apply_decisions(
        [PlaceMember("g1", "trainer", tuple(Assignment(i, f"r2-n{i:03d}") for i in range(4)))]
    )
    ready(c, "g1/trainer", "gpus")
    start(c, "g1/trainer")
    assert c.members("g1")[0].attempt == 2
    position = c.world.position
    for late in (
        c.task_failed("g1/trainer", 1, 1, "oom", actor=AGENT),
        c.task_succeeded("g1/trainer", 1, 1, actor=AGENT),
        c.task_started("g1/trainer", 3, 1, actor=AGENT),
        c.claim_ready("g1/trainer", "gpus", 1, actor=HOST),
    ):
        assert late.outcome == "stale" and late.events == ()
        assert "attempt" in late.detail
    assert c.world.position == position
    assert c.members("g1")[0].status == "RUNNING"


def test_repeated_reports_change_nothing_and_say_so():
    c = started()
    position = c.world.position
    again = c.task_started("g1/trainer", 0, 1, actor=AGENT, key="start-0")
    assert (again.outcome, again.events) == ("repeated", ())
    assert c.claim_ready("g1/trainer", "gpus", 1, actor=HOST).outcome == "repeated"
    c.task_succeeded("g1/trainer", 0, 1, actor=AGENT)
    position = c.world.position
    assert c.task_succeeded("g1/trainer", 0, 1, actor=AGENT).outcome == "repeated"
    failed_after = c.task_failed("g1/trainer", 0, 1, "error", actor=AGENT)
    assert failed_after.outcome == "stale" and "SUCCEEDED" in failed_after.detail
    assert c.world.position == position


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda c: c.task_started("g1/trainer", 0, 2, actor=AGENT), "no placement attempt 2"),
        (lambda c: c.task_started("g1/trainer", 0, 0, actor=AGENT), "no placement attempt 0"),
        (lambda c: c.task_started("g1/trainer", 9, 1, actor=AGENT), "no task 9 in attempt 1"),
        (lambda c: c.task_succeeded("g1/svc", 0, 1, actor=AGENT), "only a job's tasks"),
        (lambda c: c.claim_ready("g1/trainer", "nope", 1, actor=HOST), "no claim 'nope'"),
        (
            lambda c: c.task_started("g1/trainer", 0, 1, actor=AGENT, key="has space"),
            "report key",
        ),
    ],
)
def test_a_report_that_cannot_be_right_is_refused_and_writes_nothing(call, match):
    c = started()
    position = c.world.position
    with pytest.raises(DomainError, match=match):
        call(c)
    assert c.world.position == position


def test_a_task_never_starts_before_the_barrier():
    spec = trainer_and_services()
    c = new_controller()
    c.submit(spec)
    c.apply_decisions([full_placement(spec)])
    with pytest.raises(IllegalTransition, match="before the barrier"):
        c.task_started("g1/svc", 0, 1, actor=AGENT)


def test_reports_carry_their_attempt_task_key_and_actor_into_the_log_and_replay():
    c = started()
    c.task_succeeded("g1/trainer", 1, 1, actor=AGENT, key="exit-1")
    _, event = list(c.read_events())[-1]
    assert (event.task, event.attempt, event.key, event.actor) == (1, 1, "exit-1", AGENT)
    rebuilt = rebuild(RecorderSource(c.recorder))
    assert canonical_encode(rebuilt) == canonical_encode(c.world)


def test_replicas_placed_alone_get_a_new_attempt_and_old_reports_about_them_are_stale():
    c = started()
    c.task_failed("g1/svc", 1, 1, "error", actor=AGENT)
    svc = c.members("g1")[1]
    assert svc.status == "RUNNING" and svc.running_tasks == 1
    c.apply_decisions([PlaceMember("g1", "svc", (Assignment(1, "r3-n001"),))])
    svc = c.members("g1")[1]
    assert (svc.attempt, svc.task(1).attempt, svc.task(0).attempt) == (2, 2, 1)
    assert c.task_started("g1/svc", 1, 1, actor=AGENT).outcome == "stale"
    assert c.task_started("g1/svc", 1, 2, actor=AGENT).outcome == "applied"
    assert c.task_failed("g1/svc", 0, 1, "oom", actor=AGENT).outcome == "applied"  # still current
    check_world(c.world)


def test_a_replica_failing_before_its_set_started_fails_the_set_as_a_whole():
    """A replica is placed again alone only into a running set: before the start, the
    policy restarts the whole set (found by the reconcile property test)."""
    spec = trainer_and_services()
    c = new_controller()
    c.submit(spec)
    c.apply_decisions([full_placement(spec)])
    ready(c, "g1/trainer", "gpus")
    assert c.members("g1")[1].status == "READY"
    report = c.task_failed("g1/svc", 1, 1, "error", actor=AGENT)
    assert event_names(list(report.events)) == ["MemberFailed", "MemberRestarted"]
    assert report.events[0].index is None
    assert c.members("g1")[1].status == "RESTARTING"
    check_world(c.world)


def with_task_claims():
    """A two-task job whose tasks each prove their own device healthy, and a service."""
    spec = (
        a_group()
        .with_member("trainer", tasks=2, claims=("gpus",), task_claims=("device",))
        .with_member("svc", replicas=2)
        .build()
    )
    c = new_controller()
    c.submit(spec)
    c.apply_decisions([full_placement(spec)])
    return c


def test_a_tasks_own_claims_gate_the_barrier_task_by_task():
    c = with_task_claims()
    trainer = c.members("g1")[0]
    assert [t.claims for t in trainer.tasks] == [{"device": "PENDING"}] * 2
    ready(c, "g1/trainer", "gpus")
    assert c.members("g1")[0].status == "PLACED"  # the tasks' own claims are pending
    first = c.claim_ready("g1/trainer", "device", 1, task=0, actor=HOST)
    assert event_names(list(first.events)) == ["ClaimReady"] and first.events[0].task == 0
    assert not c.may_start("g1/svc")
    last = c.claim_ready("g1/trainer", "device", 1, task=1, actor=HOST)
    assert event_names(list(last.events)) == ["ClaimReady", "BarrierReleased"]
    again = c.claim_ready("g1/trainer", "device", 1, task=1, actor=HOST)
    assert again.outcome == "repeated"
    check_world(c.world)
    # Tasks without claims of their own share one empty map, which no claim reaches.
    service = c.members("g1")[1]
    assert all(task.claims is NO_TASK_CLAIMS for task in service.tasks)
    assert NO_TASK_CLAIMS == {}


def test_a_tasks_failed_claim_releases_the_group_before_the_start():
    c = with_task_claims()
    report = c.claim_failed("g1/trainer", "device", 1, "ecc errors", task=1, actor=HOST)
    assert event_names(list(report.events))[0] == "ClaimFailed"
    assert c.group("g1").status == "PENDING"
    late = c.claim_ready("g1/trainer", "device", 1, task=0, actor=HOST)
    assert late.outcome == "stale"


def test_a_task_claim_is_refused_for_a_claim_or_task_that_does_not_exist():
    c = with_task_claims()
    with pytest.raises(DomainError, match="has no claim 'gpus'"):
        c.claim_ready("g1/trainer", "gpus", 1, task=0, actor=HOST)
    with pytest.raises(DomainError, match="no task 7"):
        c.claim_ready("g1/trainer", "device", 1, task=7, actor=HOST)


def test_a_replica_placed_alone_starts_only_once_its_own_claims_are_ready():
    spec = (
        a_group()
        .with_member("svc", replicas=2, task_claims=("device",))
        .with_rule("restart-member", members=("svc",), reasons=("error",), max_restarts=2)
        .build()
    )
    c = new_controller()
    c.submit(spec)
    c.apply_decisions([full_placement(spec)])
    for task in (0, 1):
        c.claim_ready("g1/svc", "device", 1, task=task, actor=HOST)
    start(c, "g1/svc")
    c.task_failed("g1/svc", 1, 1, "error", actor=AGENT)
    c.apply_decisions([PlaceMember("g1", "svc", (Assignment(1, "r9-n001"),))])
    with pytest.raises(IllegalTransition, match="claims"):
        c.task_started("g1/svc", 1, 2, actor=AGENT)
    c.claim_ready("g1/svc", "device", 2, task=1, actor=HOST)
    assert c.task_started("g1/svc", 1, 2, actor=AGENT).outcome == "applied"
    assert c.members("g1")[0].running_tasks == 2
    check_world(c.world)
