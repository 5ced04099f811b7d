"""Pend reasons (DESIGN §3.5): one deterministic text per situation.

The Controller records a reason only when it differs from the last one, so the text
must depend only on the state (never on timing noise or iteration order): the same
situation in the next session gives the same bytes and no new event.
"""

from __future__ import annotations

from costart.domain.events import PendClass, PendReason
from costart.domain.states import GroupState, MemberState
from costart.placement.planner import Shortfall


def _ahead(queue_position: int) -> str:
    return f"behind {queue_position} reservation{'s' if queue_position != 1 else ''}"


def from_shortfall(cls: PendClass, shortfall: Shortfall, queue_position: int) -> PendReason:
    """A reason naming the blocking member, its need and the best the cluster offers."""
    lead = {
        "capacity": "not enough free capacity",
        "topology": "free capacity does not meet the topology constraints",
        "queue": f"{_ahead(queue_position)} that need this capacity",
        "infeasible": "can never fit the cluster as it is now",
    }.get(cls, cls)
    return PendReason(
        cls=cls,
        message=f"{lead}: {shortfall.member}: {shortfall.need}; {shortfall.best}",
        member=shortfall.member,
        need=f"{shortfall.member}: {shortfall.need}",
        best=shortfall.best,
        queue_position=queue_position,
    )


def backoff(group: GroupState) -> PendReason:
    after = f" after: {group.last_reason}" if group.last_reason else ""
    return PendReason(
        cls="backoff",
        message=f"backing off until t={group.retry_at_ns}ns (attempt {group.attempt}){after}",
    )


def reserving(
    member: str, need: str, held_tasks: int, total_tasks: int, queue_position: int
) -> PendReason:
    """An open reservation waiting for running work to free the rest of its plan."""
    where = f"; {_ahead(queue_position)}" if queue_position else "; head of the queue"
    return PendReason(
        cls="capacity",
        message=(
            f"reserving: {held_tasks}/{total_tasks} tasks held; waiting for {member}: {need}{where}"
        ),
        member=member,
        need=f"{member}: {need}",
        best=f"{held_tasks}/{total_tasks} tasks held",
        queue_position=queue_position,
    )


def unknown_placement_group(member: str | None, name: str) -> PendReason:
    return PendReason(
        cls="infeasible",
        message=f"placement group {name!r} is not defined",
        member=member,
    )


def waiting_for_claims(members: list[MemberState]) -> PendReason | None:
    pending = [
        f"{m.name}/{claim}"
        for m in members
        for claim, status in sorted(m.claims.items())
        if status == "PENDING"
    ] + [
        f"{m.name}/{claim}[task {t.index}]"
        for m in members
        for t in m.tasks
        if t.status == "PLACED"
        for claim, status in sorted(t.claims.items())
        if status == "PENDING"
    ]
    if not pending:
        return None
    first = pending[0].split("/", 1)[0]
    return PendReason(
        cls="claims",
        message=f"placed; waiting for claims: {', '.join(pending)}",
        member=first,
        need=", ".join(pending),
    )
