"""The event-stream audit (`EventAudit`) catches each history rule it owns: the barrier
once per attempt and only for the current one, starts only after it, and nothing after a
group ended."""

from __future__ import annotations

import pytest

from costart.domain import events as ev
from costart.domain.errors import InvariantViolation
from costart.domain.ids import group_id, member_ids
from costart.domain.invariants import EventAudit
from tests.builders import a_group

SPEC = a_group("audited").with_member("a").build()
GID = group_id(1, SPEC.name)
MID = member_ids(GID, ["a"])[0]


def group_event(cls, version, **fields):
    return cls(originator_id=GID, originator_version=version, group_id=GID, at_ns=version, **fields)


def started(version=2):
    return ev.MemberStarted(originator_id=MID, originator_version=version, group_id=GID, at_ns=9)


def submitted_audit() -> EventAudit:
    audit = EventAudit()
    audit.observe(group_event(ev.GroupSubmitted, 1, spec=SPEC, submission_seq=1, member_ids=(MID,)))
    return audit


def test_a_clean_history_passes():
    audit = submitted_audit()
    audit.observe(group_event(ev.BarrierReleased, 2, attempt=1))
    audit.observe(started())
    audit.observe(group_event(ev.PlacementReleased, 3, reason="restart", retry_at_ns=5))
    audit.observe(group_event(ev.BarrierReleased, 4, attempt=2))
    audit.observe(started(3))
    audit.observe(group_event(ev.GroupCancelled, 5))


def test_a_start_before_the_barrier_is_caught():
    audit = submitted_audit()
    with pytest.raises(InvariantViolation, match="started before barrier") as caught:
        audit.observe(started())
    assert caught.value.group == "audited"


def test_a_second_release_in_one_attempt_is_caught():
    audit = submitted_audit()
    audit.observe(group_event(ev.BarrierReleased, 2, attempt=1))
    with pytest.raises(InvariantViolation, match="released twice"):
        audit.observe(group_event(ev.BarrierReleased, 3, attempt=1))


def test_a_release_for_another_attempt_is_caught():
    audit = submitted_audit()
    with pytest.raises(InvariantViolation, match="wrong attempt"):
        audit.observe(group_event(ev.BarrierReleased, 2, attempt=2))


def test_a_start_after_a_release_needs_the_new_attempts_barrier():
    audit = submitted_audit()
    audit.observe(group_event(ev.BarrierReleased, 2, attempt=1))
    audit.observe(group_event(ev.PlacementReleased, 3, reason="timeout", retry_at_ns=5))
    with pytest.raises(InvariantViolation, match="started before barrier"):
        audit.observe(started())


@pytest.mark.parametrize("ended", [ev.GroupSucceeded, ev.GroupFailed, ev.GroupCancelled])
def test_nothing_happens_to_a_group_after_it_ended(ended):
    audit = submitted_audit()
    fields = {"member": None, "reason": "x"} if ended is ev.GroupFailed else {}
    audit.observe(group_event(ended, 2, **fields))
    with pytest.raises(InvariantViolation, match="terminal groups never change"):
        audit.observe(started())


def member_event(cls, version, **fields):
    return cls(originator_id=MID, originator_version=version, group_id=GID, at_ns=version, **fields)


@pytest.mark.parametrize("reason", ["preempted", "node-lost"])
def test_a_budget_free_failure_whose_restart_was_counted_is_caught(reason):
    audit = submitted_audit()
    failed = member_event(
        ev.MemberFailed, 2, reason=reason, exit_code=None, action="restart-member"
    )
    audit.observe(failed)
    audit.observe(member_event(ev.MemberRestarted, 3, restarts=0, counted=False))
    audit.observe(failed)
    with pytest.raises(InvariantViolation, match=f"a {reason} restart was counted"):
        audit.observe(member_event(ev.MemberRestarted, 4, restarts=1, counted=True))


def test_a_counted_error_restart_and_an_uncounted_preempted_group_restart_pass():
    audit = submitted_audit()
    audit.observe(
        member_event(ev.MemberFailed, 2, reason="error", exit_code=1, action="restart-member")
    )
    audit.observe(member_event(ev.MemberRestarted, 3, restarts=1, counted=True))
    restart = dict(member="a", reason="preempted")
    audit.observe(group_event(ev.GroupRestarted, 2, attempt=2, restarts=0, **restart))
    with pytest.raises(InvariantViolation, match="a preempted group restart was counted"):
        audit.observe(group_event(ev.GroupRestarted, 3, attempt=3, restarts=1, **restart))
