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
from eventsourcing.persistence import ApplicationRecorder

from costart.domain import events as ev
from costart.domain.ids import id_text
from costart.domain.states import GroupState, MemberState
from costart.domain.world import World
from costart.eventlog.anchor import anchor_at, check_reaches
from costart.lmdbkit.datafile import free_bytes, is_space_error
from costart.lmdbkit.errors import StoreFullError
from costart.logging_setup import library_logger
from costart.projections import derive
from costart.projections.models import Histogram, HoldView, PendEntry
from costart.projections.view_store import ViewDamagedError, ViewDB, hold_key, sub_key, u32, u64

log = library_logger("costart.projections")

DEFAULT_BATCH: Final = 500
SECOND_NS: Final = 10**9
# Upper bounds of the duration histograms (seconds), then +Inf.
BUCKETS_S: Final = (1, 5, 10, 30, 60, 120, 300, 600, 1800, 3600, 7200, 21600)
TIME_TO_START: Final = "time_to_start"
BARRIER_WAIT: Final = "barrier_wait"
HISTOGRAMS: Final = (TIME_TO_START, BARRIER_WAIT)
COUNTS: Final = "counts"
SCHEMA: Final = b"schema"
VIEWS_SCHEMA: Final = 2
"""What the stored views hold. 2: event counters (`Views.counters`). Views written under
another schema are rebuilt from the log on the next catch-up, so a count never starts
from zero in the middle of a log."""


def counter_key(event: ev.DomainEvent) -> str | None:
    """The event counter an event adds one to (`Views.counters`), if any: member
    failures by reason, restarts, timeouts and releases."""
    match event:
        case ev.MemberFailed(reason=reason):
            return f"member_failures:{reason}"
        case ev.MemberRestarted():
            return "member_restarts"
        case ev.GroupRestarted():
            return "group_restarts"
        case ev.ReservationTimedOut():
            return "reservation_timeouts"
        case ev.BarrierTimedOut():
            return "barrier_timeouts"
        case ev.PlacementReleased():
            return "releases"
        case _:
            return None


class EventSource(Protocol):
    """Where events come from: the Controller, or a recorder opened read-only. Its
    ``recorder`` is the log itself: the views' anchor is checked against it."""

    @property
    def recorder(self) -> ApplicationRecorder: ...

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
        self.counts: dict[str, int] | None = None  # loaded on the first counted event

    def _load_group(self, group_id: UUID) -> GroupState | None:
        key = id_text(group_id)
        group = self.world.groups.get(key)
        if group is None:
            group = self.db.get(self.txn, "gstate", key.encode(), GroupState)
            if group is None:
                return None
            self.world.groups[key] = group
            self.world.forget_node_use()  # members put in around `apply`
            for member_id in group.member_ids:
                member = self.db.get(self.txn, "mstate", id_text(member_id).encode(), MemberState)
                if member is not None:
                    self.world.members[id_text(member_id)] = member
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
        key = counter_key(event)
        if key is not None:
            if self.counts is None:
                self.counts = self.db.get(self.txn, "stats", COUNTS.encode(), dict[str, int]) or {}
            self.counts[key] = self.counts.get(key, 0) + 1
        self.world.apply(event)
        gid = id_text(event.group_id)
        member = self.world.members.get(id_text(event.originator_id))
        entry = derive.timeline_entry(position, event, member)
        self.db.put(self.txn, "timeline", sub_key(gid, u64(position)), entry)
        if isinstance(event, ev.PendReasonChanged):
            pend = PendEntry(position=position, at_ns=event.at_ns, reason=event.reason)
            self.db.put(self.txn, "pend", sub_key(gid, u64(position)), pend)
        if isinstance(event, ev.GroupSubmitted):
            self.db.put(self.txn, "order", u64(event.submission_seq), gid)
            self.db.put(self.txn, "names", event.spec.name.encode(), gid)
        self.touched[gid] = event.at_ns

    def finish(self, position: int, recorder: ApplicationRecorder) -> None:
        """Write the touched groups' state and rows, the histograms and the position."""
        for gid in sorted(self.touched):
            group = self.world.groups[gid]
            # A batch may end between a group's submission and its members' creation
            # (one atomic append, several notifications): show the members created so far.
            members = [
                self.world.members[id_text(mid)]
                for mid in group.member_ids
                if id_text(mid) in self.world.members
            ]
            self.db.put(self.txn, "gstate", gid.encode(), group)
            for member in members:
                index = group.member_ids.index(member.id)
                self.db.put(self.txn, "mstate", id_text(member.id).encode(), member)
                row = derive.member_view(group, member, index)
                self.db.put(self.txn, "members", sub_key(gid, u32(index)), row)
            row_g = derive.group_view(group, members, self.touched[gid])
            self.db.put(self.txn, "groups", gid.encode(), row_g)
            self._replace_holds(gid, derive.hold_views(group, members))
        for name in sorted(self.histograms):
            self.db.put(self.txn, "stats", name.encode(), self.histograms[name])
        if self.counts is not None:
            self.db.put(self.txn, "stats", COUNTS.encode(), dict(sorted(self.counts.items())))
        self.db.put(self.txn, "stats", SCHEMA, VIEWS_SCHEMA)
        self.db.set_anchor(self.txn, anchor_at(recorder, position))

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


def apply_batch(
    db: ViewDB,
    txn: Any,
    events: Iterable[tuple[int, ev.DomainEvent]],
    recorder: ApplicationRecorder,
) -> int:
    """Fold ``events`` (read from ``recorder``'s log) into the views inside ``txn``;
    returns how many were applied.

    The caller commits (or aborts) ``txn``: the anchor (the last position and the log's
    chain hash there) is written in it too.
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
        batch.finish(last, recorder)
    return count


def catch_up(db: ViewDB, source: EventSource, batch_size: int = DEFAULT_BATCH) -> int:
    """Apply everything the log holds beyond the views' position, one transaction per
    batch. Returns the number of events applied. Safe to run from several processes.

    First checks that the log still reaches the position (and chain hash) the views were
    built to: `LogTailLostError` otherwise, and the views are left as they are.
    Views written under another `VIEWS_SCHEMA` are rebuilt instead."""
    with db.read() as txn:
        anchor = db.anchor(txn)
        stale = anchor.position > 0 and db.get(txn, "stats", SCHEMA, int) != VIEWS_SCHEMA
    if stale:
        # Never rebuild over the evidence of a lost tail.
        check_reaches(source.recorder, anchor, "the views were built to")
        log.info("views rebuilt: written under another schema", schema=VIEWS_SCHEMA)
        return rebuild(db, source, batch_size)
    total = 0
    recorder = source.recorder
    while True:
        try:
            with db.write() as txn:
                anchor = db.anchor(txn)
                if not total:
                    check_reaches(recorder, anchor, "the views were built to")
                after = anchor.position
                events = islice(source.read_events(after), batch_size)
                applied = apply_batch(db, txn, events, recorder)
        except lmdb.MapFullError:
            db.grow()  # the aborted batch is retried in the bigger map
            continue
        except lmdb.Error as error:  # nothing of the batch was written
            if is_space_error(error):
                raise StoreFullError(str(db.path), 0, free_bytes(db.path), str(error)) from None
            raise ViewDamagedError("(file)", None, f"{db.path}: {error}") from None
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
