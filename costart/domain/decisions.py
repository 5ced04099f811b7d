"""What the co-placement step decides, as the Controller's ``apply_decisions`` takes it.

Placement computes decisions from a read-only view; the Controller turns each into
events on one group, appended atomically per decision.
"""

from __future__ import annotations

import msgspec

from costart.domain.events import Assignment, PendReason, RuntimeEstimate


class PlaceGroup(msgspec.Struct, frozen=True):
    """Place every member of a waiting group (its whole gang) at once."""

    group: str
    assignments: dict[str, tuple[Assignment, ...]]


class HoldCapacity(msgspec.Struct, frozen=True):
    """Open (or grow) the group's reservation with holds for some members' tasks."""

    group: str
    holds: dict[str, tuple[Assignment, ...]]


class PlaceMember(msgspec.Struct, frozen=True):
    """Place one member (or more replicas of it) alone, after the group started."""

    group: str
    member: str
    assignments: tuple[Assignment, ...]


class ReleaseGroup(msgspec.Struct, frozen=True):
    """Give back everything the group holds or uses, then back off and retry."""

    group: str
    reason: str


class SetPendReason(msgspec.Struct, frozen=True):
    """The group's current pend reason; written only when it differs."""

    group: str
    reason: PendReason


class LendHolds(msgspec.Struct, frozen=True):
    """A ``reserve-backfill`` reservation (``group``) lends held tasks to ``borrower``."""

    group: str
    holds: dict[str, tuple[Assignment, ...]]
    borrower: str


class PlaceBorrower(msgspec.Struct, frozen=True):
    """Place a waiting group's whole gang on capacity lent by reservation ``lender``."""

    group: str
    assignments: dict[str, tuple[Assignment, ...]]
    lender: str
    admitted_until_ns: int | None = None
    """Admitted on a runtime estimate (ADR 0121): until when (else None, by limits)."""
    estimates: tuple[RuntimeEstimate, ...] = ()
    """The records of the expected runtimes the admission rested on."""


class Preempt(msgspec.Struct, frozen=True):
    """Stop the group's tasks on ``nodes``: reservation ``lender`` takes its capacity back."""

    group: str
    nodes: tuple[str, ...]
    lender: str


Decision = (
    PlaceGroup
    | HoldCapacity
    | PlaceMember
    | ReleaseGroup
    | SetPendReason
    | LendHolds
    | PlaceBorrower
    | Preempt
)
