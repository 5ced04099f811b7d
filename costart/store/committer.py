"""Group commit: concurrent writers in one process share one LMDB write transaction.

Leader/follower: a caller that finds no commit in progress becomes the leader and
commits its own request at once (no thread hand-off on the uncontended path).
Callers arriving while a commit runs queue up; when the leader is done it wakes
them all and promotes the first queued one, which commits everything queued so
far in one transaction -- so under load, N callers pay for one fsync.

Per-caller atomicity inside a shared transaction: a request's index entries are
inserted first with ``overwrite=False`` (which is the duplicate check); on a
conflict the entries it already inserted are deleted again and only that caller
gets the ``IntegrityError``. Records and tracking are written only after a
request's checks passed. Anything else going wrong aborts the whole transaction
and fails every caller in it, except ``MapFullError``, which aborts, grows the
map and retries the group: nothing was acknowledged, so nothing is lost.

Notification ids and chain links are assigned inside the write transaction, so
LMDB's single-writer lock orders them across threads *and* processes.

Fencing (ADR 0009): a request may carry its writer's lease epoch. The stored epoch is
read inside the same write transaction, and a request whose epoch differs is refused
with `FencedError` (breaking its chain) -- a lease change and an append are ordered by
the same lock, so no append of a deposed writer can land after a new epoch began.
A request may instead carry the host's leadership term (ADR 0027): an older term than
the stored one is refused with `StaleTermError`, a newer one is stored in the same
transaction (a request without events is a bare claim of the term).
"""

from __future__ import annotations

import threading
from typing import Final, Protocol
from uuid import UUID

import lmdb
from eventsourcing.persistence import IntegrityError, OperationalError

from costart.eventlog.capabilities import WriteChain
from costart.eventlog.errors import CorruptRecordError, StaleTermError
from costart.lmdbkit.datafile import free_bytes, is_space_error, short_write_without_room
from costart.lmdbkit.errors import StoreFullError
from costart.store.environment_port import EnvironmentPort
from costart.store.errors import FencedError
from costart.store.headroom import COMMIT_PAGES, Headroom
from costart.store.lease import LEASE_DB, store_term, stored_epoch, stored_term
from costart.store.record_layout import (
    GENESIS,
    LogHandles,
    PreparedEvent,
    check_record,
    encode_record,
    pack_u64,
    unpack_u64,
)

MAX_GROUP: Final = 512
"""Most requests committed in one transaction (bounds its size and latency)."""


class ChainBrokenError(OperationalError):
    """An earlier write of the same chain failed; this one was not written."""


class WriteRequest:
    """One caller's atomic unit: events for one log and/or one tracking record."""

    __slots__ = (
        "chain",
        "done",
        "epoch",
        "error",
        "events",
        "ids",
        "leads",
        "log",
        "promoted",
        "term",
        "tracking",
    )

    def __init__(
        self,
        log: LogHandles | None,
        events: list[PreparedEvent],
        tracking: tuple[lmdb._Database, bytes, int] | None = None,
        chain: WriteChain | None = None,
        term: int | None = None,
    ) -> None:
        """``term``: the host's leadership term the write carries (None: not fenced by
        one)."""
        self.log = log
        self.events = events
        self.tracking = tracking
        self.chain = chain
        self.epoch = chain.epoch if chain is not None else None
        self.term = term
        self.ids: range | None = None
        self.error: BaseException | None = None
        self.done: threading.Event | None = None
        self.promoted = False
        self.leads = False


class CommittingStore(EnvironmentPort, Protocol):
    """What the committer needs of its store: the environment, and the headroom it tops
    up after each commit."""

    headroom: Headroom


class GroupCommitter:
    """The single writer of one ``LmdbStore``."""

    def __init__(self, store: CommittingStore) -> None:
        self._store = store
        self._lock = threading.Lock()
        self._queue: list[WriteRequest] = []
        self._busy = False
        # (position, checksum) of the last record this committer wrote to each log and
        # checked then: the next commit does not hash that record again if it is still
        # the log's last one (another process may have appended since).
        self._verified_heads: dict[str, tuple[int, bytes]] = {}

    def submit(self, request: WriteRequest) -> range | None:
        """Commit ``request`` (possibly with others); return its notification ids.

        Returns only once the transaction holding the request is committed (and,
        in sync mode, on disk). Raises the request's own error, if any.
        """
        self.enqueue(request)
        return self.wait(request)

    def enqueue(self, request: WriteRequest) -> None:
        """Queue ``request`` in order; the caller MUST then call `wait` for it (if it is
        the leader, nothing commits until it does). Splitting the two lets a caller
        queue under its own lock, in its own order, and wait for the shared fsync
        after releasing it."""
        with self._lock:
            self._queue.append(request)
            if self._busy:
                request.done = threading.Event()
            else:
                self._busy = True
                request.leads = True

    def wait(self, request: WriteRequest) -> range | None:
        """Block until ``request`` is committed; its ids, or its error raised."""
        if request.leads:
            self._lead()
        else:
            assert request.done is not None
            request.done.wait()
            if request.promoted:
                self._lead()
        if request.error is not None:
            raise request.error
        return request.ids

    def _lead(self) -> None:
        with self._lock:
            group = self._queue[:MAX_GROUP]
            del self._queue[:MAX_GROUP]
        written = 0
        try:
            written = self._commit(group)
        finally:
            for request in group:
                if request.done is not None:
                    request.done.set()
            # Still the only committer of this process: top up the file's headroom
            # (rarely does anything) before handing over.
            self._store.headroom.keep(written)
            with self._lock:
                successor = self._queue[0] if self._queue else None
                if successor is None:
                    self._busy = False
                else:
                    successor.promoted = True
            if successor is not None:
                assert successor.done is not None  # queued while busy
                successor.done.set()

    def _commit(self, group: list[WriteRequest]) -> int:
        """Commit what of ``group`` may be written; the bytes of state it appended."""
        store = self._store
        # Opened before the transaction: opening a database needs a transaction itself.
        lease_db = None
        if any(request.epoch is not None or request.term is not None for request in group):
            try:
                lease_db = store.db(LEASE_DB)
            except BaseException as e:
                _fail(group, e)
                return 0
        while True:
            try:
                txn = store.begin(write=True)
            except BaseException as e:
                _fail(group, e)
                return 0
            try:
                lease_epoch = stored_epoch(txn, lease_db) if lease_db is not None else 0
                terms = _Terms(txn, lease_db) if lease_db is not None else None
                heads: dict[str, tuple[int, bytes]] = {}
                touched = _write_group(txn, group, lease_epoch, heads, self._verified_heads, terms)
                txn.commit()
            except lmdb.MapFullError:
                txn.abort()
                store.leave()
                try:
                    store.grow()
                except BaseException as e:
                    _fail(group, e)
                    return 0
                continue
            except BaseException as e:
                txn.abort()
                store.leave()
                _fail(group, e, store)
                return 0
            store.leave()
            break
        self._verified_heads.update(heads)
        store.maybe_sync()
        if touched:
            store.notify(touched)
        return sum(len(event[4]) for request in group if request.ids for event in request.events)


class _Terms:
    """The stored host term within one write transaction: read once, raised as
    requests with newer terms are written."""

    __slots__ = ("current", "db", "txn")

    def __init__(self, txn: lmdb.Transaction[bytes], db: lmdb._Database) -> None:
        self.txn, self.db = txn, db
        self.current = stored_term(txn, db)

    def admit(self, term: int) -> None:
        """Refuse an older term; store a newer one."""
        if term < self.current:
            raise StaleTermError(term, self.current)
        if term > self.current:
            store_term(self.txn, self.db, term)
            self.current = term


def _write_group(
    txn: lmdb.Transaction[bytes],
    group: list[WriteRequest],
    lease_epoch: int,
    heads: dict[str, tuple[int, bytes]],
    verified: dict[str, tuple[int, bytes]],
    terms: _Terms | None = None,
) -> set[str]:
    """Write each request of a group that may be written; the names of the logs appended
    to. A request's own failure (a broken chain, fenced, a conflict) fails it alone.
    ``heads`` collects each appended log's new (last id, checksum); ``terms``: the
    stored host term (None when no request of the group carries an epoch or term)."""
    touched: set[str] = set()
    for request in group:
        request.ids = request.error = None
        chain = request.chain
        if chain is not None and chain.broken is not None:
            request.error = ChainBrokenError(
                f"not written: an earlier write of this controller failed ({chain.broken})"
            )
            continue
        try:
            if request.epoch is not None and request.epoch != lease_epoch:
                raise FencedError(request.epoch, lease_epoch)
            if request.term is not None and terms is not None:
                terms.admit(request.term)
            if _apply(txn, request, heads, verified) and request.log is not None:
                touched.add(request.log.name)
        except (IntegrityError, CorruptRecordError, FencedError, StaleTermError) as e:
            request.error = e
            if chain is not None:
                chain.broken = e
    return touched


def _needed(store: CommittingStore, group: list[WriteRequest]) -> int:
    """The room a group's commit needs: its records and the pages a commit adds."""
    records = sum(len(event[4]) for request in group for event in request.events)
    return records + COMMIT_PAGES * store.page_size


def _no_room(store: CommittingStore, group: list[WriteRequest], error: lmdb.Error) -> bool:
    """Whether the commit failed for want of room: ENOSPC, a quota or a file-size limit,
    or a short write (EIO) that met the end of the disk or the limit."""
    return is_space_error(error) or short_write_without_room(
        error, store.settings.path, _needed(store, group)
    )


def _space_error(
    store: CommittingStore, group: list[WriteRequest], error: lmdb.Error
) -> StoreFullError:
    """Name the store and the room the failed commit needed."""
    needed = _needed(store, group)
    return StoreFullError(store.settings.path, needed, free_bytes(store.settings.path), str(error))


def _fail(
    group: list[WriteRequest], error: BaseException, store: CommittingStore | None = None
) -> None:
    """Fail every request of a group whose transaction could not be committed."""
    if store is not None and isinstance(error, lmdb.Error) and _no_room(store, group, error):
        error = _space_error(store, group, error)
    elif isinstance(error, lmdb.Error):
        error = OperationalError(f"LMDB write failed: {error!r}")
    for request in group:
        request.ids = None
        request.error = error
        if request.chain is not None and request.chain.broken is None:
            request.chain.broken = error


def _read_head(
    txn: lmdb.Transaction[bytes], log: LogHandles, verified: tuple[int, bytes] | None
) -> tuple[int, bytes]:
    """Last notification id and checksum of a log, checking the last record unless it is
    the one ``verified`` names (written and checked by this committer)."""
    cursor = txn.cursor(db=log.records)
    if not cursor.last():
        return 0, GENESIS
    position = unpack_u64(cursor.key())[0]
    value = cursor.value()
    # Never chain new records onto a corrupt tail.
    if verified != (position, value[-16:]):
        check_record(value, log.name, position)
    return position, value[-16:]


def _apply(
    txn: lmdb.Transaction[bytes],
    request: WriteRequest,
    heads: dict[str, tuple[int, bytes]],
    verified: dict[str, tuple[int, bytes]],
) -> bool:
    """Write one request into the shared transaction; all of it or none of it.

    Returns whether records were appended to the request's log.
    """
    tracking = request.tracking
    if tracking is not None:
        tracking_db, app_key, tracking_id = tracking
        current = txn.get(app_key, db=tracking_db)
        if current is not None and unpack_u64(current)[0] >= tracking_id:
            msg = (
                f"tracking notification id {tracking_id} for {app_key.decode()!r} "
                f"not greater than current max tracking id {unpack_u64(current)[0]}"
            )
            raise IntegrityError(msg)

    events = request.events
    log = request.log
    if events and log is not None:
        head = heads.get(log.name)
        last_id, prev = head if head is not None else _read_head(txn, log, verified.get(log.name))
        # One putmulti per database: py-lmdb drops and retakes the GIL around
        # every call, and with busy threads each retake can wait a whole switch
        # interval, so per-event calls made big commits crawl under contention.
        index_entries = [(e[0], pack_u64(last_id + 1 + i)) for i, e in enumerate(events)]
        index = txn.cursor(db=log.index)
        _, added = index.putmulti(index_entries, overwrite=False)
        if added != len(index_entries):
            # Conflict: take back exactly the entries this request added (they
            # point at its ids; entries that were there before point elsewhere).
            clashes = []
            for event, (key, value) in zip(events, index_entries, strict=True):
                if index.get(key) == value:
                    index.delete()
                else:
                    clashes.append(event)
            _, originator, version, _, _ = clashes[0]
            shown = UUID(bytes=originator) if isinstance(originator, bytes) else originator
            msg = (
                f"event already recorded (or repeated in its batch): originator "
                f"{shown!r} version {version} in log {log.name!r}"
            )
            raise IntegrityError(msg)
        position = last_id
        entries = []
        for event in events:
            position += 1
            value, prev = encode_record(position, event, prev)
            entries.append((pack_u64(position), value))
        txn.cursor(db=log.records).putmulti(entries, append=True)
        heads[log.name] = (position, prev)
        request.ids = range(last_id + 1, position + 1)

    if tracking is not None:
        txn.put(app_key, pack_u64(tracking_id), db=tracking_db)
    return request.ids is not None
