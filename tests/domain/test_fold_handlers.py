"""The fold, one handler at a time: each event applied to a state built by hand, and every
field it sets (or must leave alone) checked exactly, with the exact words of each refusal.

The lifecycle tests reach these handlers only through commands, which never make some of
the states a log can hold (a record from before tasks were reported, a hold lent away), and
check a handful of fields; here nothing stands between the event and the state."""

from __future__ import annotations

from typing import Any

import pytest

from costart.domain import events as ev
from costart.domain.errors import DomainError, IllegalTransition
from costart.domain.events import Assignment
from costart.domain.fold import apply_group_event, apply_member_event, new_group, new_member
from costart.domain.ids import group_id, member_ids
from costart.domain.states import GroupState, MemberState, TaskState
from tests.builders import a_group

SPEC = (
    a_group()
    .with_member("job", tasks=3, claims=("gpus",))
    .with_member("rs", replicas=3, claims=("gpus",), task_claims=("dev",))
    .build()
)
GID = group_id(1, SPEC.name)
MIDS = member_ids(GID, [m.name for m in SPEC.members])
JOB, RS = 0, 1
AT = 5_000


def a_group_state(status: str, **fields: Any) -> GroupState:
    return GroupState(
        id=GID,
        version=1,
        name=SPEC.name,
        spec=SPEC,
        submission_seq=1,
        member_ids=MIDS,
        status=status,  # type: ignore[arg-type]
        **fields,
    )


def a_member_state(index: int, status: str, **fields: Any) -> MemberState:
    return MemberState(
        id=MIDS[index],
        version=1,
        group_id=GID,
        spec=SPEC.members[index],
        status=status,  # type: ignore[arg-type]
        **fields,
    )


def group_event(kind: type[ev.DomainEvent], version: int = 2, **fields: Any) -> Any:
    return kind(originator_id=GID, originator_version=version, group_id=GID, at_ns=AT, **fields)


def member_event(which: int, kind: type[ev.DomainEvent], version: int = 2, **fields: Any) -> Any:
    return kind(
        originator_id=MIDS[which], originator_version=version, group_id=GID, at_ns=AT, **fields
    )


def task(index: int, status: str = "PLACED", **fields: Any) -> TaskState:
    return TaskState(index=index, node=f"n{index}", attempt=1, status=status, **fields)  # type: ignore[arg-type]


def spots(*indexes: int) -> list[Assignment]:
    return [Assignment(i, f"n{i}") for i in indexes]


# --- groups ------------------------------------------------------------------------------


def test_a_release_sends_the_group_back_to_pending_with_its_reason_and_counters():
    group = a_group_state(
        "PLACED", attempt=2, releases=1, barrier_deadline_ns=9, placed_at_ns=3, last_reason="x"
    )
    apply_group_event(
        group, group_event(ev.PlacementReleased, reason="claim-failed", retry_at_ns=77)
    )
    assert (group.status, group.attempt, group.releases, group.retry_at_ns, group.version) == (
        "PENDING",
        3,
        2,
        77,
        2,
    )
    assert (group.barrier_deadline_ns, group.placed_at_ns, group.last_reason) == (
        None,
        None,
        "claim-failed",
    )


@pytest.mark.parametrize(
    ("kind", "status"),
    [(ev.ReservationTimedOut, "RESERVING"), (ev.BarrierTimedOut, "PLACED")],
    ids=["reservation", "barrier"],
)
def test_a_timeout_is_noted_as_the_groups_last_reason_by_its_event_name(kind, status):
    group = a_group_state(status, last_reason="before")
    apply_group_event(group, group_event(kind, attempt=1))
    assert (group.status, group.last_reason, group.version) == (status, kind.__name__, 2)


def test_a_recovered_group_runs_again():
    group = a_group_state("DEGRADED", last_reason="rs: below min_running")
    apply_group_event(group, group_event(ev.GroupRecovered))
    assert (group.status, group.last_reason) == ("RUNNING", "rs: below min_running")


def test_a_group_restart_counts_and_names_the_member_and_reason():
    group = a_group_state("RUNNING", group_restarts=1)
    apply_group_event(
        group, group_event(ev.GroupRestarted, attempt=1, restarts=2, member="job", reason="oom")
    )
    assert (group.group_restarts, group.last_reason, group.status) == (2, "job: oom", "RUNNING")


@pytest.mark.parametrize("version", [1, 3, 0], ids=["same", "skips-one", "behind"])
def test_a_group_event_out_of_version_order_is_refused_naming_both_versions(version):
    group = a_group_state("DEGRADED")
    with pytest.raises(DomainError) as caught:
        apply_group_event(group, group_event(ev.GroupRecovered, version=version))
    assert str(caught.value) == (
        f"event GroupRecovered for {GID} has version {version}; expected 2"
    )
    assert (group.status, group.version) == ("DEGRADED", 1)


def test_a_group_event_its_state_does_not_allow_is_an_illegal_transition():
    group = a_group_state("PENDING")
    with pytest.raises(IllegalTransition) as caught:
        apply_group_event(group, group_event(ev.GroupRecovered))
    assert str(caught.value) == "group g1 is PENDING: cannot GroupRecovered"
    assert (group.status, group.version) == ("PENDING", 1)


def test_an_event_the_group_fold_has_no_handler_for_is_an_illegal_transition():
    group = a_group_state("RUNNING")
    with pytest.raises(IllegalTransition) as caught:
        apply_group_event(group, group_event(ev.NodeStatusChanged, node="n1", status="down"))
    assert str(caught.value) == "group g1 is RUNNING: cannot NodeStatusChanged"
    assert group.version == 1


# --- members: creation, holds, placement, release --------------------------------------------------


def test_a_created_member_waits_for_each_of_its_claims():
    submitted = group_event(
        ev.GroupSubmitted, version=1, spec=SPEC, submission_seq=1, member_ids=MIDS
    )
    group = new_group(submitted)
    created = member_event(RS, ev.MemberCreated, version=1, spec=SPEC.members[RS])
    member = new_member(created, group)
    assert (member.status, member.claims, member.desired, member.version) == (
        "PENDING",
        {"gpus": "PENDING"},
        3,
        1,
    )


def test_lending_part_of_a_hold_keeps_the_rest_held():
    member = a_member_state(RS, "HELD", held=spots(0, 1, 2))
    apply_member_event(
        member, member_event(RS, ev.HoldLent, assignments=tuple(spots(1)), borrower="g2")
    )
    assert (member.status, member.held, member.version) == ("HELD", spots(0, 2), 2)


def test_lending_the_whole_hold_leaves_the_member_pending():
    member = a_member_state(RS, "HELD", held=spots(0, 1))
    apply_member_event(
        member, member_event(RS, ev.HoldLent, assignments=tuple(spots(1, 0)), borrower="g2")
    )
    assert (member.status, member.held) == ("PENDING", [])


def test_lending_a_task_the_member_does_not_hold_is_refused():
    member = a_member_state(RS, "HELD", held=spots(0, 1))
    with pytest.raises(DomainError) as caught:
        apply_member_event(
            member, member_event(RS, ev.HoldLent, assignments=tuple(spots(1, 5)), borrower="g2")
        )
    assert str(caught.value) == "member rs: lends tasks [1, 5] it does not hold"
    assert (member.status, member.held, member.version) == ("HELD", spots(0, 1), 1)


def test_a_released_member_stops_its_live_tasks_at_the_release():
    member = a_member_state(
        JOB,
        "RUNNING",
        assignments=spots(0, 1),
        claims={"gpus": "READY"},
        tasks=[task(0, "RUNNING", started_at_ns=1), task(1, "SUCCEEDED", ended_at_ns=2)],
        started_at_ns=1,
    )
    apply_member_event(member, member_event(JOB, ev.MemberReleased, reason="restart-group"))
    assert member.tasks == [
        task(0, "STOPPED", started_at_ns=1, ended_at_ns=AT),
        task(1, "SUCCEEDED", ended_at_ns=2),
    ]
    assert (member.status, member.assignments, member.claims) == (
        "PENDING",
        [],
        {"gpus": "PENDING"},
    )
    assert (member.started_at_ns, member.ended_at_ns) == (None, None)


# --- members: claims ---------------------------------------------------------------------


def test_a_claim_of_a_task_never_placed_is_refused():
    member = a_member_state(RS, "PLACED", tasks=[task(0, claims={"dev": "PENDING"})])
    with pytest.raises(DomainError) as caught:
        apply_member_event(member, member_event(RS, ev.ClaimReady, claim="dev", task=9))
    assert str(caught.value) == "member rs has no task 9"


def test_a_claim_already_ready_is_refused():
    member = a_member_state(JOB, "PLACED", claims={"gpus": "READY"})
    with pytest.raises(DomainError) as caught:
        apply_member_event(member, member_event(JOB, ev.ClaimReady, claim="gpus"))
    assert str(caught.value) == "member job: claim 'gpus' is not PENDING"


def test_a_failed_claim_the_member_does_not_have_is_refused():
    member = a_member_state(JOB, "PLACED", claims={"gpus": "PENDING"})
    with pytest.raises(DomainError) as caught:
        apply_member_event(member, member_event(JOB, ev.ClaimFailed, claim="disk", reason="gone"))
    assert str(caught.value) == "member job: no claim 'disk'"


def test_a_failed_member_claim_is_failed_and_named_in_the_last_reason():
    member = a_member_state(JOB, "PLACED", claims={"gpus": "PENDING"})
    apply_member_event(member, member_event(JOB, ev.ClaimFailed, claim="gpus", reason="driver"))
    assert (member.claims, member.last_reason, member.status) == (
        {"gpus": "FAILED"},
        "claim gpus: driver",
        "PLACED",
    )


def test_a_failed_task_claim_is_failed_on_its_task_and_names_the_task():
    member = a_member_state(
        RS,
        "PLACED",
        claims={"gpus": "READY"},
        tasks=[task(0, claims={"dev": "READY"}), task(1, claims={"dev": "PENDING"})],
    )
    apply_member_event(
        member, member_event(RS, ev.ClaimFailed, claim="dev", reason="xid 79", task=1)
    )
    assert member.tasks == [task(0, claims={"dev": "READY"}), task(1, claims={"dev": "FAILED"})]
    assert (member.claims, member.last_reason) == ({"gpus": "READY"}, "claim dev of task 1: xid 79")


# --- members: start, tasks, failure ------------------------------------------------------


def test_a_start_that_names_no_task_starts_every_placed_task():
    # A record from before tasks were reported: the member started as a whole.
    member = a_member_state(
        JOB,
        "READY",
        tasks=[task(0), task(1, "STOPPED", ended_at_ns=3), task(2)],
        claims={"gpus": "READY"},
    )
    apply_member_event(member, member_event(JOB, ev.MemberStarted))
    assert member.tasks == [
        task(0, "RUNNING", started_at_ns=AT),
        task(1, "STOPPED", ended_at_ns=3),
        task(2, "RUNNING", started_at_ns=AT),
    ]
    assert (member.status, member.started_at_ns) == ("RUNNING", AT)


@pytest.mark.parametrize(
    ("tasks", "index", "attempt"),
    [
        ([task(0, "RUNNING", started_at_ns=1)], 0, 1),
        ([task(0)], 0, 2),
        ([task(0)], 4, 1),
    ],
    ids=["already-running", "other-attempt", "never-placed"],
)
def test_a_task_start_needs_that_placed_task_of_that_attempt(tasks, index, attempt):
    member = a_member_state(JOB, "RUNNING", tasks=tasks)
    with pytest.raises(DomainError) as caught:
        apply_member_event(member, member_event(JOB, ev.TaskStarted, task=index, attempt=attempt))
    assert str(caught.value) == f"member job: no PLACED task {index} of attempt {attempt}"
    assert (member.tasks, member.version) == (tasks, 1)


def test_a_failed_replica_is_dropped_and_counted_and_the_set_lives_on():
    member = a_member_state(
        RS,
        "RUNNING",
        assignments=spots(0, 1),
        failed_replicas=2,
        tasks=[task(0, "RUNNING", started_at_ns=1), task(1, "RUNNING", started_at_ns=1)],
    )
    failed = member_event(
        RS, ev.MemberFailed, reason="oom", exit_code=137, action="tolerate", index=1
    )
    apply_member_event(member, failed)
    assert member.tasks == [
        task(0, "RUNNING", started_at_ns=1),
        task(1, "FAILED", started_at_ns=1, ended_at_ns=AT, exit_code=137),
    ]
    assert (member.status, member.assignments, member.failed_replicas) == (
        "RUNNING",
        spots(0),
        3,
    )
    assert (member.last_reason, member.last_exit_code, member.ended_at_ns) == ("oom", 137, None)


def test_a_job_task_failure_fails_the_job_and_stops_its_other_tasks():
    member = a_member_state(
        JOB,
        "RUNNING",
        assignments=spots(0, 1),
        tasks=[task(0, "RUNNING", started_at_ns=1), task(1, "RUNNING", started_at_ns=1)],
    )
    failed = member_event(
        JOB, ev.MemberFailed, reason="error", exit_code=1, action="fail-group", index=0
    )
    apply_member_event(member, failed)
    assert member.tasks == [
        task(0, "FAILED", started_at_ns=1, ended_at_ns=AT, exit_code=1),
        task(1, "STOPPED", started_at_ns=1, ended_at_ns=AT),
    ]
    assert (member.status, member.ended_at_ns, member.assignments) == ("FAILED", AT, [])


def test_a_failure_that_names_no_task_fails_every_live_task():
    member = a_member_state(
        JOB,
        "RUNNING",
        assignments=spots(0, 1),
        held=spots(2),
        tasks=[task(0, "RUNNING", started_at_ns=1), task(1, "SUCCEEDED", ended_at_ns=2)],
    )
    failed = member_event(
        JOB, ev.MemberFailed, reason="node-lost", exit_code=None, action="restart-member"
    )
    apply_member_event(member, failed)
    assert member.tasks == [
        task(0, "FAILED", started_at_ns=1, ended_at_ns=AT),
        task(1, "SUCCEEDED", ended_at_ns=2),
    ]
    assert (member.status, member.ended_at_ns, member.held, member.failed_replicas) == (
        "FAILED",
        AT,
        [],
        0,
    )


def test_a_failed_member_restarting_waits_with_its_claims_pending_again():
    member = a_member_state(
        JOB,
        "FAILED",
        assignments=spots(0),
        claims={"gpus": "READY"},
        ended_at_ns=4,
        restarts=1,
    )
    apply_member_event(member, member_event(JOB, ev.MemberRestarted, restarts=2, counted=True))
    assert (member.status, member.claims, member.assignments, member.ended_at_ns) == (
        "RESTARTING",
        {"gpus": "PENDING"},
        [],
        None,
    )
    assert (member.restarts, member.uncounted_restarts) == (2, 0)


def test_scaling_down_stops_the_removed_replicas_tasks_at_the_scale():
    member = a_member_state(
        RS,
        "RUNNING",
        desired=3,
        assignments=spots(0, 1, 2),
        tasks=[
            task(0, "RUNNING", started_at_ns=1),
            task(1, "RUNNING", started_at_ns=1),
            task(2, "FAILED", ended_at_ns=2),
        ],
    )
    apply_member_event(
        member, member_event(RS, ev.MemberScaled, replicas=1, removed=tuple(spots(1, 2, 7)))
    )
    assert member.tasks == [
        task(0, "RUNNING", started_at_ns=1),
        task(1, "STOPPED", started_at_ns=1, ended_at_ns=AT),
        task(2, "FAILED", ended_at_ns=2),
    ]
    assert (member.desired, member.assignments) == (1, spots(0))


def test_a_succeeded_member_ends_its_live_tasks_as_succeeded():
    # A record from before tasks were reported: the member's success is its tasks'.
    member = a_member_state(
        JOB,
        "RUNNING",
        assignments=spots(0, 1),
        tasks=[task(0, "RUNNING", started_at_ns=1), task(1, "STOPPED", ended_at_ns=2)],
    )
    apply_member_event(member, member_event(JOB, ev.MemberSucceeded))
    assert member.tasks == [
        task(0, "SUCCEEDED", started_at_ns=1, ended_at_ns=AT),
        task(1, "STOPPED", ended_at_ns=2),
    ]
    assert (member.status, member.ended_at_ns, member.assignments) == ("SUCCEEDED", AT, [])


@pytest.mark.parametrize("version", [1, 3, 0], ids=["same", "skips-one", "behind"])
def test_a_member_event_out_of_version_order_is_refused_naming_both_versions(version):
    member = a_member_state(JOB, "RUNNING")
    with pytest.raises(DomainError) as caught:
        apply_member_event(member, member_event(JOB, ev.MemberSucceeded, version=version))
    assert str(caught.value) == (
        f"event MemberSucceeded for {MIDS[JOB]} has version {version}; expected 2"
    )
    assert (member.status, member.version) == ("RUNNING", 1)


def test_a_member_event_its_state_does_not_allow_is_an_illegal_transition():
    member = a_member_state(JOB, "PENDING")
    with pytest.raises(IllegalTransition) as caught:
        apply_member_event(member, member_event(JOB, ev.MemberSucceeded))
    assert str(caught.value) == "member job is PENDING: cannot MemberSucceeded"
    with pytest.raises(IllegalTransition) as caught:
        apply_member_event(member, member_event(JOB, ev.GroupRecovered))
    assert str(caught.value) == "member job is PENDING: cannot GroupRecovered"
    assert (member.status, member.version) == ("PENDING", 1)
