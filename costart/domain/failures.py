"""What happens when a member fails (docs/design.md §5): the group's failure policy decides.

The first matching rule picks fail-group, restart-member, restart-group or tolerate;
budgets are checked (node-lost and preempted never consume one) and a spent budget
escalates to fail-group.
"""

from __future__ import annotations

from costart.domain import events as ev
from costart.domain import limits
from costart.domain.aggregates import GroupUnit, MemberAggregate
from costart.domain.errors import DomainError, IllegalTransition
from costart.domain.lifecycle import conclude_if_done
from costart.domain.policy import consumes_budget, decide_action
from costart.domain.spec_types import FailureReason
from costart.domain.states import GROUP_STARTED
from costart.domain.teardown import fail_group, release_and_retry


def claim_failed(
    unit: GroupUnit,
    member: str,
    claim: str,
    reason: str,
    at_ns: int,
    attempt: int | None = None,
    key: str | None = None,
    task: int | None = None,
) -> None:
    """Before the start a failed claim releases the whole group (retry with backoff); after
    it, the failure policy decides for the member, or for ``task`` when the claim is the
    task's own (reason ``claim-failed``)."""
    target = unit.member(member)
    owner = target.state if task is None else target.state.task(task)
    if owner is None or claim not in owner.claims:
        where = "" if task is None else f" task {task}"
        raise DomainError(f"member {member}{where} has no claim {claim!r}")
    target.trigger(
        ev.ClaimFailed,
        at_ns,
        claim=claim,
        reason=reason[: limits.MAX_REASON_TEXT],
        attempt=attempt,
        key=key,
        task=task,
    )
    if unit.group.state.status == "PLACED":
        release_and_retry(unit, f"claim {member}/{claim} failed", at_ns, counts_attempt=True)
    else:
        fail_member(unit, member, "claim-failed", None, task, at_ns, attempt)


def fail_member(
    unit: GroupUnit,
    member: str,
    reason: FailureReason,
    exit_code: int | None,
    index: int | None,
    at_ns: int,
    attempt: int | None = None,
    key: str | None = None,
) -> None:
    """Record the failure of ``member`` (or of its task ``index`` of placement
    ``attempt``) and apply the policy: a replica set loses the replica, a job's task
    failure is the job's failure."""
    group = unit.group.state
    if group.status not in GROUP_STARTED:
        raise IllegalTransition(f"group {unit.name}", group.status, "report a member failure")
    target = unit.member(member)
    if index is not None:
        _check_task_index(target, index)
        if target.state.spec.kind == "replica-set" and target.state.status != "RUNNING":
            # Before the set started, one replica's failure fails the set as a whole: a
            # replica is placed again alone only into a running set.
            index = None
    action = decide_action(group.spec, member, reason, target.state.restarts, group.group_restarts)
    target.trigger(
        ev.MemberFailed,
        at_ns,
        reason=reason,
        exit_code=exit_code,
        action=action,
        index=index,
        attempt=attempt,
        key=key,
    )
    if action == "fail-group":
        fail_group(unit, member, f"{member} failed: {reason}", at_ns)
    elif action == "restart-member":
        counted = consumes_budget(reason)
        restarts = target.state.restarts + (1 if counted else 0)
        target.trigger(ev.MemberRestarted, at_ns, restarts=restarts, counted=counted)
    elif action == "restart-group":
        counted = consumes_budget(reason)
        restarts = group.group_restarts + (1 if counted else 0)
        unit.group.trigger(
            ev.GroupRestarted,
            at_ns,
            attempt=group.attempt + 1,
            restarts=restarts,
            member=member,
            reason=reason,
        )
        release_and_retry(unit, f"restart-group after {member} failed", at_ns, counts_attempt=False)
    else:
        _tolerate(unit, target, at_ns)


def _check_task_index(target: MemberAggregate, index: int) -> None:
    if index not in {a.index for a in target.state.assignments}:
        raise DomainError(f"member {target.name} has no placed task {index}")


def _tolerate(unit: GroupUnit, target: MemberAggregate, at_ns: int) -> None:
    state = target.state
    if state.spec.kind == "replica-set" and len(state.assignments) < state.spec.min_running:
        fail_group(
            unit,
            target.name,
            f"{target.name} has {len(state.assignments)} replicas, below min_running "
            f"{state.spec.min_running}",
            at_ns,
        )
        return
    detail = (
        f"{len(state.assignments)}/{state.desired} replicas"
        if state.spec.kind == "replica-set"
        else "job failed (tolerated)"
    )
    unit.group.trigger(ev.GroupDegraded, at_ns, member=target.name, detail=detail)
    conclude_if_done(unit, at_ns)
