"""A group's open deadlines, the one list `get`, `describe`, the REST answers and the
board show: when an open reservation expires, when the start barrier times out, when a
released group may try again, and when the runtime estimate a group was admitted on
runs out (past it, a reservation ahead may stop the group: ADR 0121)."""

from __future__ import annotations

from typing import Literal

from costart.projections.models import GroupView

DeadlineKind = Literal["reservation", "barrier", "retry", "estimate"]

# The states in which a group admitted on an estimate holds nodes it may lose.
_ON_NODES = frozenset({"PLACED", "RUNNING", "DEGRADED"})


def open_deadlines(group: GroupView) -> list[tuple[DeadlineKind, int]]:
    """Each open deadline as (kind, time in ns), in this order: reservation, barrier,
    retry (set only while the group waits after a release), estimate."""
    found: list[tuple[DeadlineKind, int | None]] = [
        ("reservation", group.reservation_deadline_ns),
        ("barrier", group.barrier_deadline_ns),
        ("retry", group.retry_at_ns if group.state == "PENDING" and group.retry_at_ns else None),
        ("estimate", group.admitted_until_ns if group.state in _ON_NODES else None),
    ]
    return [(kind, at) for kind, at in found if at is not None]
