"""Reading whole logs: chunked cursor iteration, and read-only opening of a copy.

``iter_log`` is the replay path: one cursor pass per chunk of records (one read
transaction per chunk, not per record), checking every record's checksum, that
ids are gap-free, and every chain link -- including the link of the first record
read to the one before it, so a replay from the middle is checked too.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Final, Self

from costart.store.lmdbenv import LmdbStore, log_db_name, open_store
from costart.store.record_layout import (
    GENESIS,
    LogRecord,
    pack_u64,
    record_checksum,
    to_notification,
    unpack_u64,
)
from costart.store.record_scan import scan
from costart.store.settings import StoreSettings

if TYPE_CHECKING:
    from collections.abc import Iterator
    from types import TracebackType

    from eventsourcing.persistence import Notification

CHUNK: Final = 2048
"""Records read per read transaction by ``iter_log``."""


def list_logs(store: LmdbStore) -> list[str]:
    """Names of the logs in a store (e.g. ``stored_events``, ``bankaccounts_snapshots``)."""
    prefix = log_db_name("")
    with store.read() as txn:
        cursor = txn.cursor()
        if not cursor.set_range(prefix):
            return []
        names = []
        for key in cursor.iternext(values=False):
            if not key.startswith(prefix):
                break
            names.append(key[len(prefix) :].decode())
    return names


def iter_log(
    store: LmdbStore, log: str, *, start: int = 1, chunk: int = CHUNK
) -> Iterator[LogRecord]:
    """Checked records of ``log`` from notification id ``start`` on.

    Raises ``CorruptRecordError`` naming the position of the first bad record.
    """
    records_db = store.db(log_db_name(log), create=False)
    expect = max(start, 1)
    prev: bytes | None = GENESIS if expect == 1 else None
    while True:
        with store.read() as txn:
            cursor = txn.cursor(db=records_db)
            if prev is None:
                # Starting mid-log: link the first record to its predecessor.
                before = cursor.get(pack_u64(expect - 1))
                if before is not None:
                    prev = record_checksum(before)
            if not cursor.set_range(pack_u64(expect)):
                break
            batch, expect, prev = scan(cursor, log, expect, prev, chunk)
        yield from batch
        if len(batch) < chunk:
            break


class LogReader:
    """Read access to the logs of one LMDB environment (see ``open_readonly``)."""

    def __init__(self, store: LmdbStore) -> None:
        self.store = store
        self._closed = False

    def logs(self) -> list[str]:
        return list_logs(self.store)

    def records(self, log: str = "stored_events", *, start: int = 1) -> Iterator[LogRecord]:
        """Checked records with their positions (``record.id``) in notification order."""
        return iter_log(self.store, log, start=start)

    def notifications(
        self, log: str = "stored_events", *, start: int = 1
    ) -> Iterator[Notification]:
        """The same, as eventsourcing ``Notification`` objects."""
        return (to_notification(r) for r in iter_log(self.store, log, start=start))

    def max_notification_id(self, log: str = "stored_events") -> int | None:
        records_db = self.store.db(log_db_name(log), create=False)  # before the txn begins
        with self.store.read() as txn:
            cursor = txn.cursor(db=records_db)
            return int(unpack_u64(cursor.key())[0]) if cursor.last() else None

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self.store.release()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def open_readonly(path: str | os.PathLike[str]) -> LogReader:
    """Open the logs at ``path`` for reading only, e.g. a copy for replay tools.

    Uses LMDB ``readonly=True, lock=False``: nothing is written, not even the
    lock file, so the directory may be read-only -- but no process may write to
    it meanwhile. If the environment is already open in this process, the open
    store is shared instead.
    """
    return LogReader(open_store(StoreSettings(path=os.fspath(path), readonly=True)))
