"""`LastSession`: what a session decided for its waiting groups, and from what, so the
next session can reuse it when those inputs are provably unchanged.

Most sessions follow a write that cannot change what waiting groups get: the last
session's own pend reasons (which the step never reads), or a claim turning ready or a
member starting in a placed or running group (which changes no capacity). Walking every
waiting group again (building the ledger, resolving scopes, planning, explaining) would
reach the same decisions. A waiting group's visit reads only:

* the capacity at the session's start (free, held per node and per group), node
  status and the placement groups' anchors — all functions of what the live members
  hold and use, the live list and node status (`WorldUsage.layout`, the status);
* the placement-group definitions;
* its own state and members and, in reserve mode, the lower waiting groups' state;
* the time, only as ``now_ns < retry_at_ns`` of a PENDING group;
* and what the visits before it changed in the session's ledger: earlier waiting
  groups (unchanged, so the same changes) and started groups placing single members
  (none, when no live member `wants_single`).

So when the World object, node status, definitions and layout are the same, every
group that was waiting is at the same version with the same member versions (a group
that session set a pend reason for may differ in ``version`` and ``pend_reason`` only),
no other group is waiting now, no live member wants a single placement (then or now),
and ``now_ns`` is on the same side of every backoff end, each waiting group's decisions
are the ones it got then. Placed and started groups are decided afresh (they read only
their own members). Free capacity must be a function of the World and node status, so
this is only used over the in-memory allocator.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from operator import attrgetter, itemgetter

import msgspec

from costart.domain import decisions as dec
from costart.domain.spec_types import Topology
from costart.domain.states import GROUP_WAITING, GroupState, MemberState
from costart.domain.world import World
from costart.placement import reasons

_VERSION = attrgetter("version")
NEVER_READ = ("version", "pend_reason")  # what the step never reads of a group
_READ = itemgetter(*(i for i, f in enumerate(GroupState.__struct_fields__) if f not in NEVER_READ))
_FIRST, _LAST = -(1 << 63), 1 << 63

Order = Sequence[tuple[GroupState, list[MemberState]]]


def read_fields(group: GroupState) -> tuple[object, ...]:
    """Every field of ``group`` the step may read (all but `NEVER_READ`)."""
    return tuple(_READ(msgspec.structs.astuple(group)))


class _Visit:
    """One waiting group's visit: its inputs then, and the decisions it appended."""

    __slots__ = ("copy", "decisions", "members", "version")

    def __init__(
        self, group: GroupState, members: list[MemberState], decisions: list[dec.Decision]
    ) -> None:
        self.version = group.version
        self.members = list(map(_VERSION, members))
        self.decisions = decisions
        reasoned = any(type(d) is dec.SetPendReason and d.group == group.name for d in decisions)
        self.copy = read_fields(group) if reasoned else None

    def holds(self, group: GroupState, members: list[MemberState]) -> bool:
        if list(map(_VERSION, members)) != self.members:
            return False
        if group.version != self.version:
            if self.copy is None or read_fields(group) != self.copy:
                return False
            self.version = group.version  # what changed since is unread
        return True


class LastSession:
    """The inputs and waiting groups' decisions of one session (see the module)."""

    def __init__(
        self,
        world: World,
        now_ns: int,
        status: tuple[str, ...],
        definitions: Mapping[str, Topology],
        layout: int,
        order: Order,
        visits: dict[int, list[dec.Decision]],
    ) -> None:
        """``visits``: position in ``order`` -> what that waiting group's visit appended."""
        self.world = world
        self.status = status
        self.definitions = dict(definitions)
        self.layout = layout
        self.order = order
        self.visits = {
            i: _Visit(order[i][0], order[i][1], decisions) for i, decisions in visits.items()
        }
        waiting = [order[i][0] for i in visits]  # every PENDING group is waiting
        ends = [group.retry_at_ns for group in waiting if group.status == "PENDING"]
        # The step decides the same for any time in [after, before).
        self.after = max((t for t in ends if t <= now_ns), default=_FIRST)
        self.before = min((t for t in ends if t > now_ns), default=_LAST)

    def repeat(
        self,
        world: World,
        now_ns: int,
        status: tuple[str, ...],
        definitions: Mapping[str, Topology],
        layout: int,
        order: Order,
        wanting: int,
    ) -> list[dec.Decision] | None:
        """This session's decisions if its waiting groups' inputs equal the recorded
        ones (placed groups' reasons computed afresh), else None."""
        if (
            world is not self.world
            or layout != self.layout
            or order is not self.order
            or wanting
            or not self.after <= now_ns < self.before
            or status != self.status
            or definitions != self.definitions
        ):
            return None
        visits = self.visits
        decisions: list[dec.Decision] = []
        for position, (group, members) in enumerate(order):
            visit = visits.get(position)
            if visit is not None:
                if group.status not in GROUP_WAITING or not visit.holds(group, members):
                    return None
                decisions.extend(visit.decisions)
            elif group.status == "PLACED":
                reason = reasons.waiting_for_claims(members)
                if reason is not None:
                    decisions.append(dec.SetPendReason(group.name, reason))
            elif group.status in GROUP_WAITING:
                return None
        return decisions
