"""Which event may happen in which state (docs/design.md §3.2): one table per aggregate.

Commands check it before they emit (so an illegal command raises and changes nothing),
and the fold checks it again (so a log that breaks the rules fails
loudly on replay instead of producing a silently wrong state).
"""

from __future__ import annotations

from typing import Final

from costart.domain import events as ev
from costart.domain.errors import IllegalTransition
from costart.domain.states import (
    GROUP_LIVE,
    MEMBER_STATUSES,
    GroupState,
    GroupStatus,
    MemberState,
    MemberStatus,
)

GROUP_FROM: Final[dict[type[ev.DomainEvent], frozenset[GroupStatus]]] = {
    ev.ReservationOpened: frozenset({"PENDING"}),
    ev.GroupPlaced: frozenset({"PENDING", "RESERVING"}),
    ev.ReservationTimedOut: frozenset({"RESERVING"}),
    ev.BarrierTimedOut: frozenset({"PLACED"}),
    ev.PlacementReleased: frozenset({"RESERVING", "PLACED", "RUNNING", "DEGRADED"}),
    ev.PendReasonChanged: frozenset({"PENDING", "RESERVING", "PLACED"}),
    ev.BarrierReleased: frozenset({"PLACED"}),
    ev.GroupDegraded: frozenset({"RUNNING", "DEGRADED"}),
    ev.GroupRecovered: frozenset({"DEGRADED"}),
    ev.GroupRestarted: frozenset({"RUNNING", "DEGRADED"}),
    ev.GroupSucceeded: frozenset({"RUNNING", "DEGRADED"}),
    ev.GroupFailed: GROUP_LIVE,
    ev.GroupCancelled: GROUP_LIVE,
}

MEMBER_FROM: Final[dict[type[ev.DomainEvent], frozenset[MemberStatus]]] = {
    ev.MemberHeld: frozenset({"PENDING", "HELD"}),
    ev.HoldLent: frozenset({"HELD"}),
    ev.MemberPlaced: frozenset({"PENDING", "HELD", "RESTARTING", "RUNNING"}),
    ev.MemberReleased: frozenset(MEMBER_STATUSES),
    # RUNNING: a task's own claim, of a replica placed alone into a running set.
    ev.ClaimReady: frozenset({"PLACED", "RUNNING"}),
    ev.ClaimFailed: frozenset({"PLACED", "READY", "RUNNING"}),
    ev.MemberStarted: frozenset({"READY"}),
    ev.TaskStarted: frozenset({"RUNNING"}),
    ev.TaskSucceeded: frozenset({"RUNNING"}),
    ev.MemberFailed: frozenset({"PLACED", "READY", "RUNNING"}),
    # A replica of a member not yet started (PLACED, READY) can fail too: node lost.
    ev.MemberRestarted: frozenset({"PLACED", "READY", "FAILED", "RUNNING"}),
    ev.MemberScaled: frozenset({"PENDING", "HELD", "PLACED", "READY", "RUNNING", "RESTARTING"}),
    ev.MemberSucceeded: frozenset({"RUNNING"}),
    ev.MemberStopped: frozenset({"PENDING", "HELD", "PLACED", "READY", "RUNNING", "RESTARTING"}),
}


def _verb(event_type: type[ev.DomainEvent]) -> str:
    return event_type.__name__


def check_group(group: GroupState, event_type: type[ev.DomainEvent]) -> None:
    """Raise `IllegalTransition` unless ``event_type`` may happen to ``group`` now."""
    allowed = GROUP_FROM.get(event_type)
    if allowed is None or group.status not in allowed:
        raise IllegalTransition(f"group {group.name}", group.status, _verb(event_type))


def check_member(member: MemberState, event_type: type[ev.DomainEvent]) -> None:
    """Raise `IllegalTransition` unless ``event_type`` may happen to ``member`` now."""
    allowed = MEMBER_FROM.get(event_type)
    if allowed is None or member.status not in allowed:
        raise IllegalTransition(f"member {member.name}", member.status, _verb(event_type))
