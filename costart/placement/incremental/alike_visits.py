"""`AlikeVisits`: a waiting group decided as an alike one was earlier in the session,
when nothing its visit reads has changed since (`GangSession` decides every group from
scratch, and the tests compare the two).

In a busy session most waiting groups end with a pend reason and nothing else, and many
are alike: the same members (shapes, counts), the same topology, the same mode. Such a
visit reads only (`GangSession.waiting`):

* its gang demands and scopes, compared by what they are made of (each member's name,
  shape, gang part, desired count and topology, and the group's topology); and its
  mode;
* the views of the session's capacity it plans in: with no holds of its own, every
  such group sees the same ones, so the ledger's `version` names them;
* the reservations ahead of it (a list the session only appends to: its length names
  it), which its reason names or counts;
* and, for a ``reserve`` group whose plan fails, the open reservations after it with
  holds that could give way: none, when there are no open reservations after it.

So a group is repeated only when it is PENDING and past any backoff, holds nothing,
names no placement group (its scopes would read the live groups' anchors), plans in
``atomic`` or ``reserve`` mode (``plan-ahead`` reads the shadow plan and the time), has
no open reservation after it, and no reservation lends capacity (a borrower's plan
reads its time limit); and a visit is kept only when it decided one pend reason and
changed neither the ledger nor the reservations ahead. Kept reasons live for one
session: nothing here crosses sessions.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field

from costart.domain import decisions as dec
from costart.domain.events import PendReason
from costart.domain.states import GroupState, MemberState
from costart.placement.gangs import GangSession

REPEATABLE_MODES = ("atomic", "reserve")


@dataclass
class AlikeVisits(GangSession):
    """`GangSession` that repeats the pend reason of an alike visit (see the module)."""

    alike: dict[Hashable, PendReason] = field(default_factory=dict)
    """What a visit read (`_key`) -> the reason it decided."""
    repeated: int = 0
    """Visits answered from an alike one this session (for tests and benchmarks)."""

    def waiting(
        self, group: GroupState, members: Sequence[MemberState], lower: Sequence[GroupState]
    ) -> None:
        key = self._key(group, members, lower)
        if key is None:
            super().waiting(group, members, lower)
            return
        reason = self.alike.get(key)
        if reason is not None:
            self.repeated += 1
            self.decisions.append(dec.SetPendReason(group.name, reason))
            return
        before = len(self.decisions)
        version, ahead = self.ledger.version(), len(self.reservations_ahead)
        super().waiting(group, members, lower)
        decided = self.decisions[before:]
        if (
            len(decided) == 1
            and type(decided[0]) is dec.SetPendReason
            and self.ledger.version() == version
            and len(self.reservations_ahead) == ahead
        ):
            self.alike[key] = decided[0].reason

    def _key(
        self, group: GroupState, members: Sequence[MemberState], lower: Sequence[GroupState]
    ) -> Hashable:
        """What the group's visit reads, or None when it may read more (see the module)."""
        spec = group.spec
        placement = spec.placement
        if (
            group.status != "PENDING"
            or self.now_ns < group.retry_at_ns
            or placement.mode not in REPEATABLE_MODES
            or lower
            or self.backfill.lenders
            or placement.placement_group is not None
            or any(m.held for m in members)  # a PENDING group holds nothing: checked
            or any(m.placement_group is not None for m in spec.members)
        ):
            return None
        return (
            placement.mode,
            demands_and_scopes_key(group, members),
            self.ledger.version(),
            len(self.reservations_ahead),
        )


def demands_and_scopes_key(group: GroupState, members: Sequence[MemberState]) -> Hashable:
    """What the gang demands and scopes of a group that holds nothing and names no
    placement group are made of (`gang_demands` without holds, `resolve_scopes` without
    placement groups): the group's topology and, per member in order, its name, shape,
    gang part, desired count and topology. Equal keys, equal demands and scopes; cheaper
    than making them (hashed in C, no `Demand` or `Scope` built per group)."""
    return (
        group.spec.placement.topology,
        tuple(
            (m.spec.name, m.spec.shape, m.spec.min_start, m.desired, m.spec.topology)
            for m in members
        ),
    )
