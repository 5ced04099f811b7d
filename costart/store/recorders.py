"""eventsourcing recorders over a shared ``LmdbStore``.

Each log (an application's events, or its snapshots) is two named databases:
records keyed by notification id, and an index from originator key + version to
notification id. Every read checks the checksum of each record it returns (and
the chain link between consecutive records it reads), raising
``CorruptRecordError`` with the record's position.
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any, Final

from eventsourcing.persistence import (
    AggregateRecorder,
    ApplicationRecorder,
    Notification,
    ProcessRecorder,
    StoredEvent,
    Subscription,
    Tracking,
    TrackingRecorder,
)

from costart.eventlog.capabilities import Capability, LogRecorder, WriteChain
from costart.eventlog.errors import CorruptRecordError, Defect
from costart.eventlog.host_term import check_term
from costart.eventlog.record_checksum import originator_value
from costart.store.committer import GroupCommitter, WriteRequest
from costart.store.lease import LEASE_DB, stored_term
from costart.store.lmdbenv import LmdbStore, tracking_db_name
from costart.store.record_layout import (
    GENESIS,
    LogRecord,
    PreparedEvent,
    decode_record,
    index_key,
    originator_key,
    pack_u64,
    to_notification,
    to_stored_event,
    unpack_u64,
)
from costart.store.record_scan import scan
from costart.store.subscription import LmdbSubscription
from costart.store.whole_log import iter_log

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence
    from uuid import UUID

    import lmdb

_MAX_KEY_SUFFIX: Final = b"\xff" * 8


class LmdbRecorder:
    """Holds one reference to a shared store for as long as the recorder lives."""

    def __init__(self, store: LmdbStore) -> None:
        store.retain()
        self.store = store
        self._release = weakref.finalize(self, store.release)

    def close(self) -> None:
        """Release this recorder's hold on the store (idempotent)."""
        self._release()


def prepare_events(stored_events: Sequence[StoredEvent]) -> list[PreparedEvent]:
    """Keys and field values of events, computed in the caller's thread.

    Done before queueing for the writer, so a malformed event fails its own
    caller only, and the shared write transaction does as little as possible.
    """
    prepared: list[PreparedEvent] = []
    last_id: UUID | str | None = None
    okey = b""
    for event in stored_events:
        originator_id = event.originator_id
        if originator_id != last_id:
            okey = originator_key(originator_id)
            last_id = originator_id
        prepared.append(
            (
                index_key(okey, event.originator_version),
                originator_value(originator_id),
                event.originator_version,
                event.topic,
                bytes(event.state),
            )
        )
    return prepared


class DeferredWrite:
    """A queued write; `wait` exactly once (the queue may be waiting on this caller)."""

    __slots__ = ("_committer", "_request")

    def __init__(self, committer: GroupCommitter, request: WriteRequest) -> None:
        self._committer = committer
        self._request = request

    def wait(self) -> list[int]:
        ids = self._committer.wait(self._request)
        return list(ids) if ids is not None else []


class LmdbAggregateRecorder(LmdbRecorder, AggregateRecorder, LogRecorder):
    """Events of aggregates, in one log (e.g. an application's snapshots). Every record
    read is checked against its checksum first (a bad one raises)."""

    capabilities = Capability.VERIFIED_READS | Capability.DEFERRED_INSERTS

    def __init__(self, store: LmdbStore, *, log_name: str = "stored_events", create: bool = True):
        super().__init__(store)
        self.log = store.log_handles(log_name, create=create)

    def insert_events(
        self, stored_events: Sequence[StoredEvent], **kwargs: Any
    ) -> Sequence[int] | None:
        self._insert(stored_events, **kwargs)
        return None

    def _insert(self, stored_events: Sequence[StoredEvent], **kwargs: Any) -> list[int]:
        if not stored_events:
            return []
        request = WriteRequest(self.log, prepare_events(stored_events), term=self.term)
        ids = self.store.committer.submit(request)
        return list(ids) if ids is not None else []

    def insert_events_deferred(
        self, stored_events: Sequence[StoredEvent], chain: WriteChain
    ) -> DeferredWrite:
        """Queue the events now, in the caller's order; `DeferredWrite.wait` blocks until
        they are committed (sharing one fsync with whatever else is queued). A failed
        write breaks ``chain``: every later write of the chain fails too."""
        request = WriteRequest(self.log, prepare_events(stored_events), chain=chain, term=self.term)
        self.store.committer.enqueue(request)
        return DeferredWrite(self.store.committer, request)

    def select_events(
        self,
        originator_id: UUID | str,
        *,
        gt: int | None = None,
        lte: int | None = None,
        desc: bool = False,
        limit: int | None = None,
    ) -> Sequence[StoredEvent]:
        okey = originator_key(originator_id)
        lo = okey + pack_u64(max(gt + 1, 0)) if gt is not None else okey + pack_u64(0)
        if lte is not None:
            if lte < 0 or (gt is not None and lte <= gt):
                return []
            hi = okey + pack_u64(lte)
        else:
            hi = okey + _MAX_KEY_SUFFIX
        results: list[StoredEvent] = []
        if limit is not None and limit <= 0:
            return results
        name = self.log.name
        records_db = self.log.records
        with self.store.read() as txn:
            cursor = txn.cursor(db=self.log.index)
            if desc:
                if cursor.set_range(hi):
                    if cursor.key() > hi and not cursor.prev():
                        return results
                elif not cursor.last():
                    return results
                entries = cursor.iterprev()
            else:
                if not cursor.set_range(lo):
                    return results
                entries = cursor.iternext()
            get = txn.get
            for key, value in entries:
                if key > hi if not desc else key < lo:
                    break
                position = unpack_u64(value)[0]
                raw = get(value, db=records_db)
                try:
                    if raw is None:
                        raise CorruptRecordError(name, position, Defect.INDEX, "no such record")
                    record = decode_record(raw, name, position)
                    if pack_u64(record.originator_version) != key[-8:]:
                        raise CorruptRecordError(name, position, Defect.INDEX, "version differs")
                except CorruptRecordError as error:
                    # Name the version the index promised: a reader may skip past it.
                    version = unpack_u64(key[-8:])[0]
                    raise CorruptRecordError(
                        name, position, error.defect, error.detail, version
                    ) from None
                results.append(to_stored_event(record))
                if len(results) == limit:
                    break
        return results


class LmdbApplicationRecorder(LmdbAggregateRecorder, ApplicationRecorder):
    """An application's events, with gap-free notification ids in commit order, named by
    their chain hash; fenced by the host's term once one is claimed (the environment's
    newest term is kept beside its lease)."""

    capabilities = (
        LmdbAggregateRecorder.capabilities
        | Capability.RECORD_CURSOR
        | Capability.RECORD_HASHES
        | Capability.HOST_TERM
    )

    def insert_events(
        self, stored_events: Sequence[StoredEvent], **kwargs: Any
    ) -> Sequence[int] | None:
        return self._insert(stored_events, **kwargs)

    def claim_term(self, term: int) -> None:
        check_term(term)
        # A request without events: the committer checks and stores the term in a
        # write transaction, ordered with every append by LMDB's writer lock.
        self.store.committer.submit(WriteRequest(None, [], term=term))
        self.term = term

    def stored_term(self) -> int:
        db = self.store.db(LEASE_DB)
        with self.store.read() as txn:
            return stored_term(txn, db)

    def select_notifications(
        self,
        start: int | None,
        limit: int,
        stop: int | None = None,
        topics: Sequence[str] = (),
        *,
        inclusive_of_start: bool = True,
    ) -> Sequence[Notification]:
        first = 1 if start is None else max(start if inclusive_of_start else start + 1, 1)
        results: list[Notification] = []
        if limit <= 0 or (stop is not None and stop < first):
            return results
        name = self.log.name
        with self.store.read() as txn:
            cursor = txn.cursor(db=self.log.records)
            if not cursor.set_range(pack_u64(first)):
                return results
            expect, prev = first, GENESIS if first == 1 else None
            while True:
                want = limit - len(results)
                # With a topic filter, scan in larger steps: most may not match.
                n = max(want, 256) if topics else want
                records, expect, prev = scan(cursor, name, expect, prev, n, stop=stop)
                got = len(records)
                if topics:
                    records = [r for r in records if r.topic in topics][:want]
                results.extend(map(to_notification, records))
                # Fewer than asked: end of log or past `stop`. Else step past
                # the last record read (scan leaves the cursor on it).
                if len(results) >= limit or got < n or not cursor.next():
                    break
        return results

    def record_hash(self, position: int) -> bytes:
        """The chain hash (checksum) of the record at ``position``: snapshots carry it so a
        snapshot is tied to the exact log it was taken from."""
        with self.store.read() as txn:
            raw = txn.get(pack_u64(position), db=self.log.records)
        if raw is None:
            raise CorruptRecordError(self.log.name, position, Defect.GAP, "no such record")
        return decode_record(raw, self.log.name, position).checksum

    def max_notification_id(self) -> int | None:
        with self.store.read() as txn:
            cursor = txn.cursor(db=self.log.records)
            if cursor.last():
                return int(unpack_u64(cursor.key())[0])
        return None

    def iter_notifications(self, start: int = 1) -> Iterator[Notification]:
        """All notifications from ``start`` on, checked, for full-log replay.

        Reads with one cursor per chunk of records (never holding a transaction
        while the caller runs), and checks every checksum and chain link.
        """
        for record in iter_log(self.store, self.log.name, start=start):
            yield to_notification(record)

    def iter_records(self, start: int = 1) -> Iterator[LogRecord]:
        """Like `iter_notifications` without building notification objects: the
        records themselves (``id``, ``topic``, ``state``), checked, for replay."""
        return iter_log(self.store, self.log.name, start=start)

    def subscribe(
        self, gt: int | None = None, topics: Sequence[str] = ()
    ) -> Subscription[ApplicationRecorder]:
        return LmdbSubscription(self, self.store, self.log.name, gt=gt, topics=topics)


class LmdbTrackingRecorder(LmdbRecorder, TrackingRecorder):
    """Highest processed notification id per upstream application."""

    def __init__(
        self,
        store: LmdbStore,
        *,
        tracking_name: str = "notification_tracking",
        create: bool = True,
    ) -> None:
        super().__init__(store)
        self.tracking_db: lmdb._Database = store.db(tracking_db_name(tracking_name), create=create)

    def _tracking_spec(self, tracking: Tracking) -> tuple[lmdb._Database, bytes, int]:
        return (
            self.tracking_db,
            tracking.application_name.encode("utf-8"),
            tracking.notification_id,
        )

    def insert_tracking(self, tracking: Tracking) -> None:
        self.store.committer.submit(WriteRequest(None, [], self._tracking_spec(tracking)))

    def max_tracking_id(self, application_name: str) -> int | None:
        with self.store.read() as txn:
            value = txn.get(application_name.encode("utf-8"), db=self.tracking_db)
        return None if value is None else int(unpack_u64(value)[0])


class LmdbProcessRecorder(LmdbTrackingRecorder, LmdbApplicationRecorder, ProcessRecorder):
    """Events and tracking written in one transaction (exactly-once processing)."""

    def __init__(
        self,
        store: LmdbStore,
        *,
        log_name: str = "stored_events",
        tracking_name: str = "notification_tracking",
        create: bool = True,
    ) -> None:
        LmdbTrackingRecorder.__init__(self, store, tracking_name=tracking_name, create=create)
        self.log = store.log_handles(log_name, create=create)

    def _insert(self, stored_events: Sequence[StoredEvent], **kwargs: Any) -> list[int]:
        tracking: Tracking | None = kwargs.get("tracking")
        if tracking is None:
            return super()._insert(stored_events)
        ids = self.store.committer.submit(
            WriteRequest(
                self.log,
                prepare_events(stored_events),
                self._tracking_spec(tracking),
                term=self.term,
            )
        )
        return list(ids) if ids is not None else []
