"""Folding events into aggregate state: the one place state changes.

Live commands and replay both go through `apply_event`, so a state rebuilt from the log
is the live state by construction. Each handler checks the transition table first.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from msgspec.structs import replace

from costart.domain import events as ev
from costart.domain.errors import DomainError
from costart.domain.states import (
    NO_TASK_CLAIMS,
    TASK_LIVE,
    ClaimStatus,
    GroupState,
    MemberState,
    TaskState,
    TaskStatus,
)
from costart.domain.transitions import GROUP_FROM, MEMBER_FROM, check_group, check_member


def new_group(event: ev.GroupSubmitted) -> GroupState:
    if len(event.member_ids) != len(event.spec.members):
        raise DomainError(f"group {event.spec.name}: member ids do not match its members")
    return GroupState(
        id=event.originator_id,
        version=event.originator_version,
        name=event.spec.name,
        spec=event.spec,
        submission_seq=event.submission_seq,
        member_ids=event.member_ids,
        submitted_at_ns=event.at_ns,
    )


def new_member(event: ev.MemberCreated, group: GroupState) -> MemberState:
    """The member ``event`` creates in ``group``. Its spec must be the group's spec of it
    (checked), and the state holds the group's own spec and id objects: one copy of each
    in memory (ADR 0013)."""
    spec = event.spec
    members = group.spec.members
    for index in range(len(members)):
        if members[index].name == spec.name:
            linked = members[index]
            break
    else:
        raise DomainError(f"group {group.name} has no member {spec.name!r}")
    if (
        linked != spec
        or group.member_ids[index].int != event.originator_id.int
        or group.id.int != event.group_id.int
    ):
        raise DomainError(f"member {spec.name!r} differs from its group {group.name}'s spec")
    return member_of(group, index, event.originator_version)


def member_of(group: GroupState, index: int, version: int) -> MemberState:
    """Member ``index`` of ``group`` as its creation (at ``version``) makes it, holding the
    group's own spec and id objects. The caller has checked the creation's event against
    the group (`new_member`)."""
    linked = group.spec.members[index]
    # Positional (the fields in their order), a third cheaper than by keyword: a replay
    # makes every member of the log.
    return MemberState(
        group.member_ids[index],
        version,
        group.id,
        linked,
        "PENDING",  # status
        linked.count,  # desired
        0,  # attempt
        [],  # tasks
        [],  # held
        [],  # assignments
        dict.fromkeys(linked.claims, "PENDING"),  # claims
    )


# --- group handlers ---------------------------------------------------------------------


def _reservation_opened(g: GroupState, e: ev.ReservationOpened) -> None:
    g.status = "RESERVING"
    g.reservation_deadline_ns = e.deadline_ns


def _group_placed(g: GroupState, e: ev.GroupPlaced) -> None:
    g.status = "PLACED"
    g.reservation_deadline_ns = None
    g.barrier_deadline_ns = e.barrier_deadline_ns
    g.placed_at_ns = e.at_ns
    g.admitted_until_ns = e.admitted_until_ns


def _placement_released(g: GroupState, e: ev.PlacementReleased) -> None:
    g.status = "PENDING"
    g.releases += 1
    g.attempt += 1
    g.retry_at_ns = e.retry_at_ns
    g.reservation_deadline_ns = None
    g.barrier_deadline_ns = None
    g.placed_at_ns = None
    g.admitted_until_ns = None
    g.last_reason = e.reason


def _noted(g: GroupState, e: ev.ReservationTimedOut | ev.BarrierTimedOut) -> None:
    g.last_reason = type(e).__name__


def _pend_reason_changed(g: GroupState, e: ev.PendReasonChanged) -> None:
    g.pend_reason = e.reason


def _barrier_released(g: GroupState, e: ev.BarrierReleased) -> None:
    g.status = "RUNNING"
    g.barrier_released_attempt = e.attempt
    g.barrier_deadline_ns = None
    g.pend_reason = None
    if g.started_at_ns is None:
        g.started_at_ns = e.at_ns


def _degraded(g: GroupState, e: ev.GroupDegraded) -> None:
    g.status = "DEGRADED"
    g.last_reason = f"{e.member}: {e.detail}"


def _recovered(g: GroupState, e: ev.GroupRecovered) -> None:
    g.status = "RUNNING"


def _restarted(g: GroupState, e: ev.GroupRestarted) -> None:
    g.group_restarts = e.restarts
    g.last_reason = f"{e.member}: {e.reason}"


def _ended(g: GroupState, e: ev.GroupSucceeded | ev.GroupFailed | ev.GroupCancelled) -> None:
    g.status = {
        ev.GroupSucceeded: "SUCCEEDED",
        ev.GroupFailed: "FAILED",
        ev.GroupCancelled: "CANCELLED",
    }[type(e)]  # type: ignore[assignment]
    g.ended_at_ns = e.at_ns
    g.reservation_deadline_ns = None
    g.barrier_deadline_ns = None
    g.pend_reason = None
    if isinstance(e, ev.GroupFailed):
        g.last_reason = e.reason


# --- member handlers --------------------------------------------------------------------


def _held(m: MemberState, e: ev.MemberHeld) -> None:
    m.status = "HELD"
    m.held.extend(e.assignments)


def _lent(m: MemberState, e: ev.HoldLent) -> None:
    lent = {a.index for a in e.assignments}
    if not lent <= {a.index for a in m.held}:
        raise DomainError(f"member {m.name}: lends tasks {sorted(lent)} it does not hold")
    m.held = [a for a in m.held if a.index not in lent]
    if not m.held:
        m.status = "PENDING"


def _end_live_tasks(m: MemberState, status: TaskStatus, at_ns: int) -> None:
    """Every task still placed or running ends with ``status``."""
    tasks = m.tasks
    for i, task in enumerate(tasks):
        if task.status in TASK_LIVE:
            tasks[i] = replace(task, status=status, ended_at_ns=at_ns)


def _set_task(m: MemberState, index: int, **changes: Any) -> None:
    """Change the newest task of ``index`` (which must exist)."""
    tasks = m.tasks
    for i, task in enumerate(tasks):
        if task.index == index:
            tasks[i] = replace(task, **changes)
            return
    raise DomainError(f"member {m.name} has no task {index}")


def _put_task(tasks: list[TaskState], task: TaskState) -> None:
    """Put ``task`` in ``tasks`` (kept in index order): replacing the task of its index,
    else inserted at its place. A placement usually adds indexes after every one held,
    so the common case is an append."""
    index = task.index
    if not tasks or tasks[-1].index < index:
        tasks.append(task)
        return
    for i, held in enumerate(tasks):
        if held.index >= index:
            if held.index == index:
                tasks[i] = task
            else:
                tasks.insert(i, task)
            return


def _placed(m: MemberState, e: ev.MemberPlaced) -> None:
    m.attempt = attempt = m.attempt + 1
    claims = m.spec.task_claims
    tasks = m.tasks
    for a in e.assignments:
        task_claims: Mapping[str, ClaimStatus] = (
            dict.fromkeys(claims, "PENDING") if claims else NO_TASK_CLAIMS
        )
        task = TaskState(index=a.index, node=a.node, attempt=attempt, claims=task_claims)
        if tasks and tasks[-1].index >= a.index:
            _put_task(tasks, task)
        else:
            tasks.append(task)  # after every index held: the common case, without a call
    if m.status == "RUNNING":
        m.assignments.extend(e.assignments)  # a replica placed alone after the start
        return
    m.held.clear()
    m.assignments.extend(e.assignments)
    member_claims = m.spec.claims
    m.claims = dict.fromkeys(member_claims, "PENDING")
    # Member claims, all pending now, keep it PLACED without asking every task.
    m.status = "PLACED" if member_claims or not m.claims_ready else "READY"


def _released(m: MemberState, e: ev.MemberReleased) -> None:
    m.status = "PENDING"
    m.held.clear()
    m.assignments.clear()
    m.claims = dict.fromkeys(m.spec.claims, "PENDING")
    m.started_at_ns = None
    m.ended_at_ns = None
    _end_live_tasks(m, "STOPPED", e.at_ns)


def _claims_of(m: MemberState, task: int | None) -> dict[str, ClaimStatus]:
    """A private copy of the member's claims, or (``task``) that task's own, now the
    member's (the task's): changing it changes no other state's map."""
    if task is None:
        m.claims = claims = dict(m.claims)
        return claims
    current = m.task(task)
    if current is None:
        raise DomainError(f"member {m.name} has no task {task}")
    claims = dict(current.claims)
    _set_task(m, task, claims=claims)
    return claims


def _claim_ready(m: MemberState, e: ev.ClaimReady) -> None:
    claims = _claims_of(m, e.task)
    if claims.get(e.claim) != "PENDING":
        raise DomainError(f"member {m.name}: claim {e.claim!r} is not PENDING")
    claims[e.claim] = "READY"
    if m.status == "PLACED" and m.claims_ready:
        m.status = "READY"


def _claim_failed(m: MemberState, e: ev.ClaimFailed) -> None:
    claims = _claims_of(m, e.task)
    if e.claim not in claims:
        raise DomainError(f"member {m.name}: no claim {e.claim!r}")
    claims[e.claim] = "FAILED"
    where = "" if e.task is None else f" of task {e.task}"
    m.last_reason = f"claim {e.claim}{where}: {e.reason}"


def _started(m: MemberState, e: ev.MemberStarted) -> None:
    m.status = "RUNNING"
    m.started_at_ns = e.at_ns
    if e.task is not None:
        i = _task_of(m, e.task, e.attempt, "PLACED")
        m.tasks[i] = replace(m.tasks[i], status="RUNNING", started_at_ns=e.at_ns)
        return
    tasks = m.tasks  # a record from before tasks were reported: every task started
    for i, task in enumerate(tasks):
        if task.status == "PLACED":
            tasks[i] = replace(task, status="RUNNING", started_at_ns=e.at_ns)


def _task_of(m: MemberState, index: int, attempt: int | None, status: str) -> int:
    """Where in ``m.tasks`` the newest task of ``index`` is, which must be of ``attempt``
    and in ``status``: found in one pass, for the caller to replace it there."""
    for i, task in enumerate(m.tasks):
        if task.index == index:
            if task.attempt == attempt and task.status == status:
                return i
            break
    raise DomainError(f"member {m.name}: no {status} task {index} of attempt {attempt}")


def _task_started(m: MemberState, e: ev.TaskStarted) -> None:
    i = _task_of(m, e.task, e.attempt, "PLACED")
    m.tasks[i] = replace(m.tasks[i], status="RUNNING", started_at_ns=e.at_ns)


def _task_succeeded(m: MemberState, e: ev.TaskSucceeded) -> None:
    i = _task_of(m, e.task, e.attempt, "RUNNING")
    m.tasks[i] = replace(m.tasks[i], status="SUCCEEDED", ended_at_ns=e.at_ns, exit_code=e.exit_code)


def _failed(m: MemberState, e: ev.MemberFailed) -> None:
    m.last_reason = e.reason
    m.last_exit_code = e.exit_code
    if e.index is not None:
        if m.task(e.index) is not None:
            _set_task(m, e.index, status="FAILED", ended_at_ns=e.at_ns, exit_code=e.exit_code)
        if m.spec.kind == "replica-set":
            # One replica failed: drop it; the member lives on with the rest.
            m.assignments = [a for a in m.assignments if a.index != e.index]
            m.failed_replicas += 1
            if m.assignments:
                return
    # The member failed as a whole (a job's task failure is the job's): the tasks still
    # running are stopped, or failed with it in records that named no task.
    _end_live_tasks(m, "STOPPED" if e.index is not None else "FAILED", e.at_ns)
    m.status = "FAILED"
    m.ended_at_ns = e.at_ns
    m.held.clear()
    m.assignments.clear()


def _restarted_member(m: MemberState, e: ev.MemberRestarted) -> None:
    m.restarts = e.restarts
    if not e.counted:
        m.uncounted_restarts += 1
    if m.status == "FAILED":
        m.status = "RESTARTING"
        m.assignments.clear()
        m.claims = dict.fromkeys(m.spec.claims, "PENDING")
        m.ended_at_ns = None


def _scaled(m: MemberState, e: ev.MemberScaled) -> None:
    m.desired = e.replicas
    removed = {a.index for a in e.removed}
    m.assignments = [a for a in m.assignments if a.index not in removed]
    for index in sorted(removed):
        task = m.task(index)
        if task is not None and task.status in TASK_LIVE:
            _set_task(m, index, status="STOPPED", ended_at_ns=e.at_ns)


def _succeeded(m: MemberState, e: ev.MemberSucceeded) -> None:
    m.status = "SUCCEEDED"
    m.ended_at_ns = e.at_ns
    m.assignments.clear()
    _end_live_tasks(m, "SUCCEEDED", e.at_ns)  # records from before tasks were reported


def _stopped(m: MemberState, e: ev.MemberStopped) -> None:
    m.status = "STOPPED"
    m.ended_at_ns = e.at_ns
    m.last_reason = e.reason
    m.held.clear()
    m.assignments.clear()
    _end_live_tasks(m, "STOPPED", e.at_ns)


_GROUP_HANDLERS: dict[type[ev.DomainEvent], Callable[[GroupState, Any], None]] = {
    ev.ReservationOpened: _reservation_opened,
    ev.GroupPlaced: _group_placed,
    ev.PlacementReleased: _placement_released,
    ev.ReservationTimedOut: _noted,
    ev.BarrierTimedOut: _noted,
    ev.PendReasonChanged: _pend_reason_changed,
    ev.BarrierReleased: _barrier_released,
    ev.GroupDegraded: _degraded,
    ev.GroupRecovered: _recovered,
    ev.GroupRestarted: _restarted,
    ev.GroupSucceeded: _ended,
    ev.GroupFailed: _ended,
    ev.GroupCancelled: _ended,
}
_MEMBER_HANDLERS: dict[type[ev.DomainEvent], Callable[[MemberState, Any], None]] = {
    ev.MemberHeld: _held,
    ev.HoldLent: _lent,
    ev.MemberPlaced: _placed,
    ev.MemberReleased: _released,
    ev.ClaimReady: _claim_ready,
    ev.ClaimFailed: _claim_failed,
    ev.MemberStarted: _started,
    ev.TaskStarted: _task_started,
    ev.TaskSucceeded: _task_succeeded,
    ev.MemberFailed: _failed,
    ev.MemberRestarted: _restarted_member,
    ev.MemberScaled: _scaled,
    ev.MemberSucceeded: _succeeded,
    ev.MemberStopped: _stopped,
}


def _check_version(version: int, event: ev.DomainEvent) -> None:
    if event.originator_version != version + 1:
        raise DomainError(
            f"event {type(event).__name__} for {event.originator_id} has version "
            f"{event.originator_version}; expected {version + 1}"
        )


def apply_group_event(group: GroupState, event: ev.DomainEvent) -> None:
    """Fold one event into an existing group. Raises on an illegal transition."""
    kind = type(event)
    # The checks inlined (this is replay's hot path); the named functions explain a failure.
    allowed, handler = _GROUP_FOLD.get(kind, _NO_FOLD)
    version = event.originator_version
    if version != group.version + 1:
        _check_version(group.version, event)
    if group.status not in allowed:
        check_group(group, kind)
    handler(group, event)
    group.version = version


def apply_member_event(
    member: MemberState, event: ev.DomainEvent, kind: type[ev.DomainEvent] | None = None
) -> None:
    """Fold one event into an existing member. Raises on an illegal transition.

    ``kind``: the event's kind when ``event`` is a view of it, a struct of the same name
    holding the fields the handlers read (`costart.eventlog.record_fold`); else its type.
    """
    kind = kind or type(event)
    allowed, handler = _MEMBER_FOLD.get(kind, _NO_FOLD)
    version = event.originator_version
    if version != member.version + 1:
        _check_version(member.version, event)
    if member.status not in allowed:
        check_member(member, kind)
    handler(member, event)
    member.version = version


def _no_handler(state: Any, event: ev.DomainEvent) -> None:
    raise DomainError(f"no fold for {type(event).__name__}")


_NO_FOLD: tuple[frozenset[str], Callable[[Any, Any], None]] = (frozenset(), _no_handler)
_GROUP_FOLD = {kind: (GROUP_FROM[kind], handler) for kind, handler in _GROUP_HANDLERS.items()}
_MEMBER_FOLD = {kind: (MEMBER_FROM[kind], handler) for kind, handler in _MEMBER_HANDLERS.items()}
