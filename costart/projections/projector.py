"""The projector: folds `(position, event)` pairs from the log into the views.

Exactly once: each batch of events is applied in ONE LMDB write transaction that also
records the batch's last position, so a crash either keeps a whole batch and its position
or neither, and the next run resumes after the last committed position. The fold itself
is the domain's (`World.apply`) on the affected groups, loaded from the ``gstate`` and
``mstate`` databases; the display rows are then re-derived for every group the batch
touched. Nothing here reads a clock: every time comes from the events.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from itertools import islice
from typing import Any, Final, Protocol
from uuid import UUID

import lmdb
import structlog

from costart.domain import events as ev
from costart.domain.states import GroupState, MemberState
from costart.domain.world import World
from costart.projections import derive
from costart.projections.models import Histogram, HoldView, PendEntry
from costart.projections.viewdb import ViewDB, hold_key, sub_key, u32, u64

log = structlog.get_logger("costart.projections")

DEFAULT_BATCH: Final = 500
SECOND_NS: Final = 10**9
# Upper bounds of the duration histograms (seconds), then +Inf.
BUCKETS_S: Final = (1, 5, 10, 30, 60, 120, 300, 600, 1800, 3600, 7200, 21600)
TIME_TO_START: Final = "time_to_start"
BARRIER_WAIT: Final = "barrier_wait"
HISTOGRAMS: Final = (TIME_TO_START, BARRIER_WAIT)


class EventSource(Protocol):
    """Where events come from: the Controller, or a recorder opened read-only."""

    def read_events(self, after: int = 0) -> Iterator[tuple[int, ev.DomainEvent]]:
        """Every event after log position ``after``, with its position, in log order."""
        ...


def new_histogram() -> Histogram:
    bounds = tuple(b * SECOND_NS for b in BUCKETS_S)
    return Histogram(bounds_ns=bounds, counts=[0] * (len(bounds) + 1))


class _Batch:
    """One write transaction's work: a scratch `World` holding just the touched groups."""

    def __init__(self, db: ViewDB, txn: Any) -> None:
        self.db = db
        self.txn = txn
        self.world = World()
        self.touched: dict[str, int] = {}  # group id -> last event time
        self.histograms: dict[str, Histogram] = {}

    def _load_group(self, group_id: UUID) -> GroupState | None:
        key = str(group_id)
        group = self.world.groups.get(key)
        if group is None:
            group = self.db.get(self.txn, "gstate", key.encode(), GroupState)
            if group is None:
                return None
            self.world.groups[key] = group
            for member_id in group.member_ids:
                member = self.db.get(self.txn, "mstate", str(member_id).encode(), MemberState)
                if member is not None:
                    self.world.members[str(member_id)] = member
        return group

    def _histogram(self, name: str) -> Histogram:
        if name not in self.histograms:
            stored = self.db.get(self.txn, "stats", name.encode(), Histogram)
            self.histograms[name] = stored or new_histogram()
        return self.histograms[name]

    def apply(self, position: int, event: ev.DomainEvent) -> None:
        if isinstance(event, ev.NodeStatusChanged):
            # The cluster's stream, not a group's: the node view keeps drained/down nodes.
            if event.status == "up":
                if self.db.get(self.txn, "nodes", event.node.encode(), str) is not None:
                    self.db.delete(self.txn, "nodes", event.node.encode())
            else:
                self.db.put(self.txn, "nodes", event.node.encode(), event.status)
            return
        group = self._load_group(event.group_id)
        if group is not None and isinstance(event, ev.BarrierReleased):
            # Measured before the fold: it clears nothing we need, but reads placed_at_ns.
            if group.started_at_ns is None:
                self._histogram(TIME_TO_START).observe(event.at_ns - group.submitted_at_ns)
            if group.placed_at_ns is not None:
                self._histogram(BARRIER_WAIT).observe(event.at_ns - group.placed_at_ns)
        self.world.apply(event)
        gid = str(event.group_id)
        member = self.world.members.get(str(event.originator_id))
        entry = derive.timeline_entry(position, event, member)
        self.db.put(self.txn, "timeline", sub_key(gid, u64(position)), entry)
        if isinstance(event, ev.PendReasonChanged):
            pend = PendEntry(position=position, at_ns=event.at_ns, reason=event.reason)
            self.db.put(self.txn, "pend", sub_key(gid, u64(position)), pend)
        if isinstance(event, ev.GroupSubmitted):
            self.db.put(self.txn, "order", u64(event.submission_seq), gid)
            self.db.put(self.txn, "names", event.spec.name.encode(), gid)
        self.touched[gid] = event.at_ns

    def finish(self, position: int) -> None:
        """Write the touched groups' state and rows, the histograms and the position."""
        for gid in sorted(self.touched):
            group = self.world.groups[gid]
            # A batch may end between a group's submission and its members' creation
            # (one atomic append, several notifications): show the members created so far.
            members = [
                self.world.members[str(mid)]
                for mid in group.member_ids
                if str(mid) in self.world.members
            ]
            self.db.put(self.txn, "gstate", gid.encode(), group)
            for member in members:
                index = group.member_ids.index(member.id)
                self.db.put(self.txn, "mstate", str(member.id).encode(), member)
                row = derive.member_view(group, member, index)
                self.db.put(self.txn, "members", sub_key(gid, u32(index)), row)
            row_g = derive.group_view(group, members, self.touched[gid])
            self.db.put(self.txn, "groups", gid.encode(), row_g)
            self._replace_holds(gid, derive.hold_views(group, members))
        for name in sorted(self.histograms):
            self.db.put(self.txn, "stats", name.encode(), self.histograms[name])
        self.db.set_position(self.txn, position)

    def _replace_holds(self, gid: str, rows: list[HoldView]) -> None:
        old = self.db.get(self.txn, "gholds", gid.encode(), list[bytes]) or []
        for key in old:
            self.db.delete(self.txn, "holds", key)
        keys = []
        for row in rows:
            key = hold_key(row.node, gid, row.member, row.index, row.kind)
            self.db.put(self.txn, "holds", key, row)
            keys.append(key)
        if keys:
            self.db.put(self.txn, "gholds", gid.encode(), sorted(keys))
        elif old:
            self.db.delete(self.txn, "gholds", gid.encode())


def apply_batch(db: ViewDB, txn: Any, events: Iterable[tuple[int, ev.DomainEvent]]) -> int:
    """Fold ``events`` into the views inside ``txn``; returns how many were applied.

    The caller commits (or aborts) ``txn``: the position is written in it too.
    """
    batch = _Batch(db, txn)
    count = 0
    last = db.position(txn)
    for position, event in events:
        if position <= last:
            continue  # already applied: a source may repeat what we have (exactly once)
        batch.apply(position, event)
        last = position
        count += 1
    if count:
        batch.finish(last)
    return count


def catch_up(db: ViewDB, source: EventSource, batch_size: int = DEFAULT_BATCH) -> int:
    """Apply everything the log holds beyond the views' position, one transaction per
    batch. Returns the number of events applied. Safe to run from several processes."""
    total = 0
    while True:
        try:
            with db.write() as txn:
                after = db.position(txn)
                applied = apply_batch(db, txn, islice(source.read_events(after), batch_size))
        except lmdb.MapFullError:
            db.grow()  # the aborted batch is retried in the bigger map
            continue
        total += applied
        if applied < batch_size:
            break
    if total:
        log.debug("views caught up", events=total)
    return total


def rebuild(db: ViewDB, source: EventSource, batch_size: int = DEFAULT_BATCH) -> int:
    """Drop every view and fold the whole log again."""
    with db.write() as txn:
        db.clear(txn)
    return catch_up(db, source, batch_size)
