"""`LastSession`: what a session decided for its waiting groups, and from what, so the
next session can reuse it when those inputs are provably unchanged.

Most sessions follow a write that cannot change what waiting groups get: the last
session's own pend reasons (which the step never reads), or a claim turning ready or a
member starting in a placed or running group (which changes no capacity). Walking every
waiting group again (building the ledger, resolving scopes, planning, explaining) would
reach the same decisions. A waiting group's visit reads only:

* the capacity at the session's start: free capacity (the allocator's reading, compared
  whole), held per node and per group, node status and the placement groups' anchors
  — functions of what the live members hold and use, the live list and node status
  (`WorldUsage.layout`, the status);
* the placement-group definitions;
* its own state and members and, in reserve mode, the lower waiting groups' state;
* the time, only as ``now_ns < retry_at_ns`` of a PENDING group;
* and what the visits before it changed in the session's ledger: earlier waiting
  groups (unchanged, so the same changes) and started groups placing single members
  (none, when no live member `wants_single`).

So when the World object, free capacity, node status, definitions and layout are the
same, no group that was waiting and none of its members changed since (the step's
`EventJournal` lists none of them: a pend reason change, of ``version`` and
``pend_reason`` only, which the step never reads, is not listed), no other group is
waiting now, no live member wants a single placement (then or now), and ``now_ns`` is on
the same side of every backoff end, each waiting group's decisions are the ones it got
then. Placed and started groups are decided afresh (they read only their own members).

Only a session whose waiting groups were decided nothing but pend reasons is kept for a
repeat (`repeatable`): one that took or gave capacity called the allocator (a bind, for
the host's), and its decisions change those groups, so the next session could not
repeat it anyway. A repeat therefore calls the allocator for nothing, and is the same
for every allocator behind the port.

Recording a session costs nothing per group: what it read is compared lazily, through
the journal, when the next session asks (most never can repeat: their layout moved).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NamedTuple

from costart.domain import decisions as dec
from costart.domain.capacity import Capacity
from costart.domain.ids import id_text
from costart.domain.spec_types import Topology
from costart.domain.states import GROUP_WAITING, GroupState, MemberState
from costart.domain.world import World
from costart.placement import reasons
from costart.placement.incremental.journal import EventJournal

Order = Sequence[tuple[GroupState, list[MemberState]]]


class SessionInputs(NamedTuple):
    """What a session starts from, besides capacity (which ``layout`` versions)."""

    world: World
    now_ns: int
    free: list[Capacity]
    status: tuple[str, ...]
    definitions: Mapping[str, Topology]
    layout: int
    order: Order


class LastSession:
    """The inputs and waiting groups' decisions of one session (see the module)."""

    def __init__(
        self, inputs: SessionInputs, visits: dict[int, list[dec.Decision]], journal: EventJournal
    ) -> None:
        """``visits``: position in ``order`` -> what that waiting group's visit
        appended (`repeatable`)."""
        self.inputs = inputs
        self.definitions = dict(inputs.definitions)  # the step's own mapping may change
        self.journal = journal
        self.mark = journal.end  # the World as this session saw it
        self.visits = visits

    def repeat(self, now: SessionInputs, wanting: int) -> list[dec.Decision] | None:
        """This session's decisions if its waiting groups' inputs equal the recorded
        ones (placed groups' reasons computed afresh), else None."""
        then = self.inputs
        if (
            now.world is not then.world
            or now.layout != then.layout
            or now.order is not then.order
            or wanting
            or now.status != then.status
            or now.free != then.free
            or now.definitions != self.definitions
        ):
            return None
        changed = self.journal.since(self.mark, now.world)
        if changed is None:
            return None
        touched = set(changed)
        visits = self.visits
        decisions: list[dec.Decision] = []
        for position, (group, members) in enumerate(now.order):
            visit = visits.get(position)
            if visit is not None:
                if group.status not in GROUP_WAITING or _changed(group, members, touched):
                    return None
                if group.status == "PENDING":
                    end = group.retry_at_ns  # the step's only use of the time
                    if (now.now_ns < end) != (then.now_ns < end):
                        return None
                decisions.extend(visit)
            elif group.status == "PLACED":
                reason = reasons.waiting_for_claims(members)
                if reason is not None:
                    decisions.append(dec.SetPendReason(group.name, reason))
            elif group.status in GROUP_WAITING:
                return None
        return decisions


def repeatable(visits: dict[int, list[dec.Decision]]) -> bool:
    """Did the waiting groups' visits decide nothing but pend reasons (so the session
    called the allocator for nothing)?"""
    return all(type(d) is dec.SetPendReason for visit in visits.values() for d in visit)


def _changed(group: GroupState, members: list[MemberState], touched: set[str]) -> bool:
    """Did the group or one of its members change (journaled keys ``touched``)?"""
    if not touched:
        return False
    key_of = id_text
    if key_of(group.id) in touched:
        return True
    return any(key_of(m.id) in touched for m in members)
