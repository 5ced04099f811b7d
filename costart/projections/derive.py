"""Pure functions from domain state (and events) to view rows.

The state itself is folded by the domain (`costart.domain.world.World.apply`); this module
only reshapes it for display, so the views can never disagree with the controller about a
state transition. Everything iterates in spec or sorted order, never in hash order.
"""

from __future__ import annotations

from collections.abc import Sequence

from costart.display import clock
from costart.domain import events as ev
from costart.domain import task_log_path
from costart.domain.ids import id_text
from costart.domain.states import GroupState, MemberState
from costart.projections.models import GroupView, HoldView, MemberView, TaskView, TimelineEntry


def group_view(group: GroupState, members: Sequence[MemberState], last_at_ns: int) -> GroupView:
    """The group's summary row; ``members`` in spec order."""
    by_state: dict[str, int] = {}
    for member in members:
        by_state[member.status] = by_state.get(member.status, 0) + 1
    return GroupView(
        id=id_text(group.id),
        name=group.name,
        owner=group.spec.owner,
        priority=group.spec.priority,
        submission_seq=group.submission_seq,
        mode=group.spec.placement.mode,
        state=group.status,
        attempt=group.attempt,
        releases=group.releases,
        group_restarts=group.group_restarts,
        members=len(members),
        members_by_state=dict(sorted(by_state.items())),
        tasks_desired=sum(m.desired for m in members),
        tasks_placed=sum(len(m.assignments) for m in members),
        tasks_held=sum(len(m.held) for m in members),
        gpu_placed=sum(len(m.assignments) * m.spec.shape.gpu for m in members),
        gpu_held=sum(len(m.held) * m.spec.shape.gpu for m in members),
        pend_reason=group.pend_reason,
        last_reason=group.last_reason,
        submitted_at_ns=group.submitted_at_ns,
        placed_at_ns=group.placed_at_ns,
        started_at_ns=group.started_at_ns,
        ended_at_ns=group.ended_at_ns,
        reservation_deadline_ns=group.reservation_deadline_ns,
        barrier_deadline_ns=group.barrier_deadline_ns,
        retry_at_ns=group.retry_at_ns,
        last_event_at_ns=last_at_ns,
        labels=dict(group.spec.labels),
        admitted_until_ns=group.admitted_until_ns,
    )


def member_view(group: GroupState, member: MemberState, index: int) -> MemberView:
    spec = member.spec
    return MemberView(
        group=group.name,
        group_id=id_text(group.id),
        name=spec.name,
        index=index,
        kind=spec.kind,
        owner=spec.owner,
        profile=spec.profile,
        state=member.status,
        desired=member.desired,
        min_start=spec.min_start,
        min_running=spec.min_running,
        placed=len(member.assignments),
        held=len(member.held),
        gpu_per_task=spec.shape.gpu,
        nodes=tuple(sorted({a.node for a in member.assignments})),
        held_nodes=tuple(sorted({a.node for a in member.held})),
        claims=dict(member.claims),
        restarts=member.restarts,
        uncounted_restarts=member.uncounted_restarts,
        failed_replicas=member.failed_replicas,
        last_reason=member.last_reason,
        last_exit_code=member.last_exit_code,
        started_at_ns=member.started_at_ns,
        ended_at_ns=member.ended_at_ns,
        attempt=member.attempt,
        running=member.running_tasks,
        tasks=tuple(
            TaskView(
                index=t.index,
                node=t.node,
                attempt=t.attempt,
                state=t.status,
                exit_code=t.exit_code,
                started_at_ns=t.started_at_ns,
                ended_at_ns=t.ended_at_ns,
                claims=dict(t.claims),
                log=None
                if spec.run is None
                else task_log_path(
                    spec.run, group.name, str(group.id), spec.name, t.index, t.attempt
                ),
            )
            for t in member.tasks
        ),
        run=spec.run,
    )


def hold_views(group: GroupState, members: Sequence[MemberState]) -> list[HoldView]:
    """Every task's capacity the group holds or uses, one row per (node, member, task)."""
    rows: list[HoldView] = []
    for member in members:
        shape = member.spec.shape
        running = {t.index for t in member.tasks if t.status == "RUNNING"}
        for kind, assignments in (("held", member.held), ("used", member.assignments)):
            for a in assignments:
                rows.append(
                    HoldView(
                        node=a.node,
                        group=group.name,
                        group_id=id_text(group.id),
                        member=member.name,
                        index=a.index,
                        kind="held" if kind == "held" else "used",
                        gpu=shape.gpu,
                        cpu=shape.cpu,
                        mem_gb=shape.mem_gb,
                        running=kind == "used" and a.index in running,
                    )
                )
    return rows


def _nodes(assignments: Sequence[ev.Assignment]) -> str:
    nodes = sorted({a.node for a in assignments})
    shown = ",".join(nodes[:4]) + (f",…(+{len(nodes) - 4})" if len(nodes) > 4 else "")
    return f"{len(assignments)} task(s) on {shown}"


def _task(task: int | None) -> str:
    return "" if task is None else f" of task {task}"


def _of(attempt: int | None) -> str:
    return "" if attempt is None else f" of attempt {attempt}"


def event_detail(event: ev.DomainEvent) -> str:
    """A short, deterministic line describing one event (no member name: see entry)."""
    match event:
        case ev.GroupSubmitted(spec=spec):
            return f"owner {spec.owner}, priority {spec.priority}, {len(spec.members)} members"
        case ev.ReservationOpened(attempt=a):
            return f"attempt {a}"
        case ev.GroupPlaced(attempt=a, admitted_until_ns=until):
            # A borrower admitted on an estimate says until when (ADR 0121); every
            # other placement keeps its old words.
            on = "" if until is None else f"; on a runtime estimate until {clock(until)}"
            return f"attempt {a}: every member placed, waiting at the barrier{on}"
        case ev.MemberHeld(assignments=assignments) | ev.MemberPlaced(assignments=assignments):
            return _nodes(assignments)
        case ev.HoldLent(assignments=assignments, borrower=borrower):
            return f"{_nodes(assignments)} lent to {borrower}"
        case ev.PlacementReleased(reason=reason) | ev.MemberReleased(reason=reason):
            return reason
        case ev.PendReasonChanged(reason=r):
            # Exactly the old words for an old reason, so stored views stay valid; the
            # facts newer reasons store are added (`costart.display` rewrites old
            # reasons' clock text when the line is shown).
            retry = "" if r.until_ns is None else f"; retry at {clock(r.until_ns)}"
            return f"{r.cls}: {r.message}{retry}"
        case ev.ClaimReady(claim=claim, attempt=a, task=task):
            return f"claim {claim}{_task(task)}{_of(a)} READY"
        case ev.ClaimFailed(claim=claim, reason=reason, attempt=a, task=task):
            return f"claim {claim}{_task(task)}{_of(a)} FAILED: {reason}"
        case ev.BarrierReleased(attempt=a):
            return f"attempt {a}: every claim READY, members may start"
        case ev.MemberFailed(reason=reason, exit_code=code, action=action, index=index, note=note):
            where = "" if index is None else f" task {index}"
            exit_text = "" if code is None else f" exit {code}"
            # The note says why in the reporter's words (a refusal names what it refused).
            why = f" ({note})" if note else ""
            return f"{reason}{exit_text}{where}{_of(event.attempt)}{why} -> {action}"
        case ev.MemberStarted(task=task, attempt=a) if task is not None:
            return f"task {task}{_of(a)} started first"
        case ev.TaskStarted(task=task, attempt=a):
            return f"task {task}{_of(a)} started"
        case ev.TaskSucceeded(task=task, attempt=a, exit_code=code):
            return f"task {task}{_of(a)} exited {code}"
        case ev.MemberRestarted(restarts=n, counted=counted):
            return f"restart {n}" + ("" if counted else " (not counted)")
        case ev.MemberScaled(replicas=n, removed=removed):
            return f"replicas -> {n}" + (f", {len(removed)} removed" if removed else "")
        case ev.GroupRestarted(restarts=n, member=member, reason=reason):
            return f"restart {n}: {member} {reason}"
        case ev.GroupDegraded(member=member, detail=detail):
            return f"{member}: {detail}"
        case ev.GroupFailed(member=member, reason=reason):
            return reason if member is None else f"{member}: {reason}"
        case ev.MemberStopped(reason=reason):
            return reason
        case ev.ReservationTimedOut(attempt=a) | ev.BarrierTimedOut(attempt=a):
            return f"attempt {a}"
        case _:
            return ""


def timeline_entry(
    position: int, event: ev.DomainEvent, member: MemberState | None
) -> TimelineEntry:
    return TimelineEntry(
        position=position,
        at_ns=event.at_ns,
        event=type(event).__name__,
        member=None if member is None else member.name,
        detail=event_detail(event),
        actor=None if event.actor is None else str(event.actor),
    )
