"""Reports from the host about tasks and claims (docs/design.md §8, §9): each names the member's
placement attempt and the task, and is applied only if it is about what is current.

A report is one of:
- **applied**: about the current task (or claim) of the current attempt, and news;
- **repeated**: says again what the state already says (a retry, a duplicate delivery);
- **stale**: about an earlier attempt, a task placed again since, or a task that ended.
A repeated or stale report writes nothing and says so in its `Verdict`. A report that
cannot be right in any order of delivery (an attempt never placed, a task that never
existed, a start before the barrier) raises `DomainError` and writes nothing.

The attempt is the member's placement count (`MemberState.attempt`): each placement's
tasks carry its number, so a late report about a restarted task is recognised by it.
"""

from __future__ import annotations

import re
from typing import Literal

import msgspec

from costart.domain import events as ev
from costart.domain import limits
from costart.domain.aggregates import GroupUnit, MemberAggregate
from costart.domain.errors import DomainError, IllegalTransition
from costart.domain.failures import claim_failed as record_claim_failure
from costart.domain.failures import fail_member
from costart.domain.lifecycle import conclude_if_done, may_start, release_barrier_if_ready
from costart.domain.spec_types import FailureReason
from costart.domain.states import MEMBER_USING, MemberState, TaskState

Outcome = Literal["applied", "repeated", "stale"]
_KEY = re.compile(r"[A-Za-z0-9._:/-]+")


class Verdict(msgspec.Struct, frozen=True):
    """What a report did: ``outcome`` and, when it changed nothing, why."""

    outcome: Outcome
    detail: str = ""

    @property
    def applied(self) -> bool:
        return self.outcome == "applied"


APPLIED = Verdict("applied")


def check_key(key: str | None) -> None:
    """An idempotency key is short printable text (it is stored in the events)."""
    if key is not None and (len(key) > limits.MAX_REPORT_KEY or not _KEY.fullmatch(key)):
        raise DomainError(
            f"report key {key!r}: 1 to {limits.MAX_REPORT_KEY} characters of letters, digits "
            "and ._:/-"
        )


def _check_attempt(member: MemberState, attempt: int) -> None:
    if attempt < 1 or attempt > member.attempt:
        placed = f"its latest is {member.attempt}" if member.attempt else "it was never placed"
        raise DomainError(f"member {member.name} has no placement attempt {attempt} ({placed})")


def _current_task(member: MemberState, index: int, attempt: int) -> TaskState | Verdict:
    """The task a report is about, or the stale verdict if it is not current."""
    _check_attempt(member, attempt)
    task = member.task(index)
    if task is None:
        if attempt < member.attempt:
            return Verdict("stale", f"task {index} of attempt {attempt} is gone")
        raise DomainError(f"member {member.name} has no task {index} in attempt {attempt}")
    if task.attempt > attempt:
        return Verdict(
            "stale", f"task {index} was placed again by attempt {task.attempt} (report: {attempt})"
        )
    if task.attempt < attempt:
        raise DomainError(
            f"member {member.name}: task {index} was placed by attempt {task.attempt}, not {attempt}"
        )
    return task


def _ended(task: TaskState, same: str) -> Verdict:
    """A report about an ended task: repeated if it says how it ended, else stale."""
    if task.status == same:
        return Verdict("repeated", f"task {task.index} of attempt {task.attempt} is {same} already")
    return Verdict("stale", f"task {task.index} of attempt {task.attempt} ended {task.status}")


def task_started(
    unit: GroupUnit, member: str, index: int, attempt: int, key: str | None, at_ns: int
) -> Verdict:
    """Task ``index`` of ``attempt`` started. Raises `IllegalTransition` before the
    group's barrier released it (`may_start`)."""
    target = unit.member(member)
    task = _current_task(target.state, index, attempt)
    if isinstance(task, Verdict):
        return task
    if task.status == "RUNNING":
        return Verdict("repeated", f"task {index} of attempt {attempt} is RUNNING already")
    if task.status != "PLACED":
        return _ended(task, "RUNNING")
    if not may_start(unit.group.state, target.state):
        raise IllegalTransition(
            f"member {member}", target.state.status, "start a task before the barrier is released"
        )
    pending = sorted(c for c, status in task.claims.items() if status != "READY")
    if pending:
        raise IllegalTransition(
            f"task {member}/{index}", "PLACED", f"start before its claims {pending} are READY"
        )
    started = ev.TaskStarted if target.state.status == "RUNNING" else ev.MemberStarted
    target.trigger(started, at_ns, task=index, attempt=attempt, key=key)
    return APPLIED


def task_succeeded(
    unit: GroupUnit, member: str, index: int, attempt: int, key: str | None, at_ns: int
) -> Verdict:
    """Task ``index`` of a job's ``attempt`` exited successfully; the job succeeds once
    every one of its tasks has (then the group's success policy applies)."""
    target = unit.member(member)
    if target.state.spec.kind != "job":
        raise DomainError(f"member {member} is a replica-set; only a job's tasks succeed")
    task = _current_task(target.state, index, attempt)
    if isinstance(task, Verdict):
        return task
    if task.status == "PLACED":
        raise IllegalTransition(f"task {member}/{index}", "PLACED", "succeed before it started")
    if task.status != "RUNNING":
        return _ended(task, "SUCCEEDED")
    target.trigger(ev.TaskSucceeded, at_ns, task=index, attempt=attempt, key=key)
    _succeed_if_every_task_did(unit, target, at_ns)
    return APPLIED


def _succeed_if_every_task_did(unit: GroupUnit, target: MemberAggregate, at_ns: int) -> None:
    state = target.state
    done = [t for t in state.tasks if t.attempt == state.attempt and t.status == "SUCCEEDED"]
    if len(done) == state.spec.count:
        target.trigger(ev.MemberSucceeded, at_ns)
        conclude_if_done(unit, at_ns)


def task_failed(
    unit: GroupUnit,
    member: str,
    index: int,
    attempt: int,
    reason: FailureReason,
    exit_code: int | None,
    key: str | None,
    at_ns: int,
) -> Verdict:
    """Task ``index`` of ``attempt`` failed (or could not start): the group's failure
    policy decides (a job fails as a whole, a replica set loses the replica)."""
    target = unit.member(member)
    task = _current_task(target.state, index, attempt)
    if isinstance(task, Verdict):
        return task
    if task.status not in ("PLACED", "RUNNING"):
        return _ended(task, "FAILED")
    fail_member(unit, member, reason, exit_code, index, at_ns, attempt, key)
    return APPLIED


def _claim_current(
    target: MemberAggregate, claim: str, attempt: int, task: int | None
) -> str | Verdict:
    """The claim's status (the member's, or ``task``'s own), or the stale verdict if the
    report is not about the current placement."""
    state = target.state
    _check_attempt(state, attempt)
    if task is not None:
        current = _current_task(state, task, attempt)
        if isinstance(current, Verdict):
            return current
        status = current.claims.get(claim)
        if status is None:
            raise DomainError(f"task {task} of member {target.name} has no claim {claim!r}")
        if current.status != "PLACED":
            return Verdict("stale", f"claim {claim} of task {task}: the task is {current.status}")
        return status
    status = state.claims.get(claim)
    if status is None:
        raise DomainError(f"member {target.name} has no claim {claim!r}")
    if attempt < state.attempt:
        return Verdict("stale", f"claim {claim} of attempt {attempt}: the member was placed again")
    if state.status not in MEMBER_USING:
        return Verdict(
            "stale", f"claim {claim} of attempt {attempt}: the member is {state.status} since"
        )
    return status


def claim_ready(
    unit: GroupUnit,
    member: str,
    claim: str,
    attempt: int,
    key: str | None,
    at_ns: int,
    task: int | None = None,
) -> Verdict:
    """A claim of the member's placement ``attempt`` (or task ``task``'s own claim) is
    READY; the gang's last one releases the barrier."""
    target = unit.member(member)
    status = _claim_current(target, claim, attempt, task)
    if isinstance(status, Verdict):
        return status
    if status == "READY":
        return Verdict("repeated", f"claim {claim} of attempt {attempt} is READY already")
    if status == "FAILED":
        return Verdict("stale", f"claim {claim} of attempt {attempt} FAILED already")
    target.trigger(ev.ClaimReady, at_ns, claim=claim, attempt=attempt, key=key, task=task)
    release_barrier_if_ready(unit, at_ns)
    return APPLIED


def claim_failed(
    unit: GroupUnit,
    member: str,
    claim: str,
    attempt: int,
    reason: str,
    key: str | None,
    at_ns: int,
    task: int | None = None,
) -> Verdict:
    """A claim of the member's placement ``attempt`` (or task ``task``'s own) failed:
    before the start the whole group is released and retried; after it the failure
    policy decides (`costart.domain.failures.claim_failed`)."""
    target = unit.member(member)
    status = _claim_current(target, claim, attempt, task)
    if isinstance(status, Verdict):
        return status
    if status == "FAILED":
        return Verdict("repeated", f"claim {claim} of attempt {attempt} FAILED already")
    if task is None and target.state.status == "RUNNING":
        return Verdict("stale", f"claim {claim} of attempt {attempt}: the member started since")
    record_claim_failure(unit, member, claim, reason, at_ns, attempt, key, task)
    return APPLIED
