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


def _violation(audit: EventAudit, event: ev.DomainEvent) -> tuple[str, str, str | None, str]:
    with pytest.raises(InvariantViolation) as caught:
        audit.observe(event)
    found = caught.value
    return (found.rule, found.group, found.member, found.detail)


def _released(audit: EventAudit) -> EventAudit:
    audit.observe(group_event(ev.BarrierReleased, 2, attempt=1))
    return audit


def _ended(audit: EventAudit) -> EventAudit:
    audit.observe(group_event(ev.GroupCancelled, 2))
    return audit


def _counted_failure(audit: EventAudit) -> EventAudit:
    audit.observe(
        member_event(
            ev.MemberFailed, 2, reason="node-lost", exit_code=None, action="restart-member"
        )
    )
    return audit


EACH_RULE = [
    (
        lambda a: a,
        group_event(ev.BarrierReleased, 2, attempt=2),
        ("#2 barrier once per attempt", "audited", None, "wrong attempt"),
    ),
    (
        _released,
        group_event(ev.BarrierReleased, 3, attempt=1),
        ("#2 barrier once per attempt", "audited", None, "released twice"),
    ),
    (
        lambda a: a,
        started(),
        ("#2 barrier once per attempt", "audited", None, "started before barrier"),
    ),
    (
        _ended,
        started(),
        ("#7 terminal groups never change", "audited", None, "MemberStarted"),
    ),
    (
        _counted_failure,
        member_event(ev.MemberRestarted, 3, restarts=1, counted=True),
        ("#6 restart budgets", "audited", None, "a node-lost restart was counted"),
    ),
    (
        lambda a: a,
        group_event(ev.GroupRestarted, 2, attempt=2, restarts=1, member="a", reason="preempted"),
        ("#6 restart budgets", "audited", None, "a preempted group restart was counted"),
    ),
]


@pytest.mark.parametrize(
    ("before", "event", "expected"),
    EACH_RULE,
    ids=["wrong-attempt", "twice", "early-start", "after-end", "member-budget", "group-budget"],
)
def test_each_history_rule_names_itself_the_group_and_what_happened(before, event, expected):
    assert _violation(before(submitted_audit()), event) == expected


def test_a_budget_free_group_restart_keeps_the_count_the_counted_ones_reached():
    audit = submitted_audit()
    error = dict(member="a", reason="error")
    audit.observe(group_event(ev.GroupRestarted, 2, attempt=2, restarts=1, **error))
    lost = dict(member="a", reason="node-lost")
    audit.observe(group_event(ev.GroupRestarted, 3, attempt=3, restarts=1, **lost))
    with pytest.raises(InvariantViolation, match="a node-lost group restart was counted"):
        audit.observe(group_event(ev.GroupRestarted, 4, attempt=4, restarts=2, **lost))


def test_a_group_the_audit_never_saw_submitted_is_named_by_its_id():
    # An audit that joins a stream after a group's submission (as after a snapshot)
    # still names the group: by its id, the one name it has.
    audit = EventAudit()
    audit.observe(group_event(ev.GroupCancelled, 2))
    assert _violation(audit, started()) == (
        "#7 terminal groups never change",
        str(GID),
        None,
        "MemberStarted",
    )
