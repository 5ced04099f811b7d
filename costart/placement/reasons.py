"""Pend reasons (docs/design.md §3.5): one deterministic reason per situation.

The Controller records a reason only when it differs from the last one, so a reason
must depend only on the state (never on timing noise or iteration order): the same
situation in the next session gives the same bytes and no new event. A reason stores
facts (the retry time, the groups ahead) in its fields, never clock text in its words;
`costart.display.reasons` renders them when someone reads it.

A reason names the reservations ahead only while there are at most `MAX_AHEAD_NAMES`
(ADR 0116): further back it says "more than 3", which a shift of the queue does not
change. Otherwise one group leaving the head rewrote the reason of every group behind
it (a thousand queued groups: a thousand events for one cancel).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final, NamedTuple

from costart.domain.events import PendClass, PendReason
from costart.domain.states import GroupState, MemberState
from costart.placement.planner import Shortfall

MAX_AHEAD_NAMES: Final = 3
"""The most reservations ahead a reason counts and names; behind more, it says so and
records neither the count nor the names (they change whenever the queue moves)."""


class QueuePlace(NamedTuple):
    """What a reason records of the reservations ahead: ``position`` how many (None:
    more than `MAX_AHEAD_NAMES`), ``ahead`` their names (all of them, or none)."""

    position: int | None
    ahead: tuple[str, ...]


def queue_place(ahead: Sequence[str]) -> QueuePlace:
    if len(ahead) > MAX_AHEAD_NAMES:
        return QueuePlace(None, ())
    return QueuePlace(len(ahead), tuple(ahead))


def _ahead(ahead: Sequence[str]) -> str:
    n = len(ahead)
    if n > MAX_AHEAD_NAMES:
        return f"behind more than {MAX_AHEAD_NAMES} reservations"
    return f"behind {n} reservation{'s' if n != 1 else ''} ({', '.join(ahead)})"


def from_shortfall(cls: PendClass, shortfall: Shortfall, ahead: Sequence[str]) -> PendReason:
    """A reason naming the blocking member, its need and the best the cluster offers."""
    lead = {
        "capacity": "not enough free capacity",
        "topology": "free capacity does not meet the topology constraints",
        "queue": f"{_ahead(ahead)} that need this capacity",
        "infeasible": "can never fit the cluster as it is now",
    }.get(cls, cls)
    place = queue_place(ahead)
    return PendReason(
        cls=cls,
        message=f"{lead}: {shortfall.member}: {shortfall.need}; {shortfall.best}",
        member=shortfall.member,
        need=f"{shortfall.member}: {shortfall.need}",
        best=shortfall.best,
        queue_position=place.position,
        ahead=place.ahead,
    )


def backoff(group: GroupState) -> PendReason:
    """Waiting out the backoff after a release; the retry time is ``until_ns``."""
    after = f" after: {group.last_reason}" if group.last_reason else ""
    return PendReason(
        cls="backoff",
        message=f"backing off (attempt {group.attempt}){after}",
        until_ns=group.retry_at_ns,
    )


def reserving(
    member: str, need: str, held_tasks: int, total_tasks: int, ahead: Sequence[str]
) -> PendReason:
    """An open reservation waiting for the rest of its plan: behind the reservations
    ahead of it (class ``queue``), or at the head for running work to end (``capacity``)."""
    where = f"; {_ahead(ahead)}" if ahead else "; head of the queue"
    place = queue_place(ahead)
    return PendReason(
        cls="queue" if ahead else "capacity",
        message=(
            f"reserving: {held_tasks}/{total_tasks} tasks held; waiting for {member}: {need}{where}"
        ),
        member=member,
        need=f"{member}: {need}",
        best=f"{held_tasks}/{total_tasks} tasks held",
        queue_position=place.position,
        ahead=place.ahead,
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


def planned(member: str, need: str, start_ns: int, basis: str, ahead: Sequence[str]) -> PendReason:
    """A ``plan-ahead`` reservation with a planned start (shadow time): it claims its
    planned nodes; ``planned_start_ns`` and ``planned_basis`` say when and on what."""
    where = f"; {_ahead(ahead)}" if ahead else "; head of the queue"
    return PendReason(
        cls="queue" if ahead else "capacity",
        message=f"planned ahead: waiting for running work to end; {member}: {need}{where}",
        member=member,
        need=f"{member}: {need}",
        queue_position=len(ahead),
        ahead=tuple(ahead[:MAX_AHEAD_NAMES]),
        planned_start_ns=start_ns,
        planned_basis=basis,
    )
