"""Full integrity verification of logs: checksums, gap-free ids, hash chain, index.

``verify_log`` reads every record once (chunked cursor passes) and *continues*
past problems, reporting each with its log and notification id. After a bad
record the chain resumes from the checksum that record carries, so one flipped
byte is one problem, not a cascade. ``iter_verified`` is the fail-fast form: an
iterator of records that raises ``CorruptRecordError`` at the first problem.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

from costart.eventlog.errors import CorruptRecordError, Defect
from costart.store.lmdbenv import LmdbStore, index_db_name, log_db_name
from costart.store.record_layout import (
    GENESIS,
    LogRecord,
    check_fields,
    decode_record,
    originator_key,
    pack_u64,
    record_checksum,
    to_stored_event,
    unpack_u64,
)
from costart.store.recorders import LmdbAggregateRecorder
from costart.store.whole_log import LogReader, iter_log, list_logs, open_readonly

if TYPE_CHECKING:
    from collections.abc import Iterator

Target = str | os.PathLike[str] | LmdbStore | LmdbAggregateRecorder | LogReader

_CHUNK = 4096


@dataclass(frozen=True)
class Problem:
    """One integrity problem found by ``verify_log``."""

    log: str
    position: int
    defect: Defect
    detail: str = ""

    def __str__(self) -> str:
        return str(CorruptRecordError(self.log, self.position, self.defect, self.detail))


@dataclass(frozen=True)
class LogSummary:
    log: str
    records: int
    last_id: int
    head: bytes
    """Checksum of the last record: commits to the whole log's content."""


@dataclass(frozen=True)
class IntegrityReport:
    """What checking the stored records found: each log's summary and every problem
    (checksum or hash-chain breaks)."""

    logs: tuple[LogSummary, ...]
    problems: tuple[Problem, ...]

    @property
    def ok(self) -> bool:
        return not self.problems


def _resolve(target: Target) -> tuple[LmdbStore, str | None, bool]:
    """(store, log or None for all, whether we opened it and must release)."""
    if isinstance(target, LmdbAggregateRecorder):
        return target.store, target.log.name, False
    if isinstance(target, LmdbStore):
        return target, None, False
    if isinstance(target, LogReader):
        return target.store, None, False
    return open_readonly(target).store, None, True


def verify_log(target: Target, log: str | None = None) -> IntegrityReport:
    """Verify one log (``log``, or the recorder's) or every log at ``target``.

    ``target`` is a directory path (opened read-only; shares the store if the
    environment is already open in this process), a store, a reader or a recorder.
    """
    store, own_log, opened = _resolve(target)
    try:
        names = [log] if log else [own_log] if own_log else list_logs(store)
        summaries: list[LogSummary] = []
        problems: list[Problem] = []
        for name in names:
            summaries.append(_verify_records(store, name, problems))
            _verify_index(store, name, problems)
        return IntegrityReport(tuple(summaries), tuple(problems))
    finally:
        if opened:
            store.release()


def _verify_records(store: LmdbStore, log: str, problems: list[Problem]) -> LogSummary:
    records_db = store.db(log_db_name(log), create=False)
    expect, prev, count = 1, GENESIS, 0
    while True:
        seen = 0
        with store.read() as txn:
            cursor = txn.cursor(db=records_db)
            if not cursor.set_range(pack_u64(expect)):
                break
            for key, value in cursor.iternext():
                position = unpack_u64(key)[0]
                seen += 1
                count += 1
                if position != expect:
                    problems.append(Problem(log, expect, Defect.GAP, f"next is {position}"))
                try:
                    record = decode_record(value, log, position)
                    check_fields(record, log)
                except CorruptRecordError as e:
                    problems.append(Problem(log, position, e.defect, e.detail))
                else:
                    if position == expect and record.prev != prev:
                        problems.append(Problem(log, position, Defect.CHAIN))
                prev = record_checksum(value)
                expect = position + 1
                if seen == _CHUNK:
                    break
        if seen < _CHUNK:
            break
    return LogSummary(log, count, expect - 1, prev)


def _verify_index(store: LmdbStore, log: str, problems: list[Problem]) -> None:
    """Every index entry points at a record of that originator and version."""
    index_db = store.db(index_db_name(log), create=False)
    records_db = store.db(log_db_name(log), create=False)
    after = b""
    while True:
        seen = 0
        with store.read() as txn:
            cursor = txn.cursor(db=index_db)
            if not cursor.set_range(after):
                break
            if cursor.key() == after and not cursor.next():
                break
            for key, value in cursor.iternext():
                seen += 1
                after = key
                position = unpack_u64(value)[0]
                raw = txn.get(value, db=records_db)
                if raw is None:
                    problems.append(Problem(log, position, Defect.INDEX, "no such record"))
                else:
                    try:
                        event = to_stored_event(decode_record(raw, log, position))
                    except CorruptRecordError:
                        continue  # already reported by the records pass
                    expected = originator_key(event.originator_id) + pack_u64(
                        event.originator_version
                    )
                    if expected != key:
                        problems.append(
                            Problem(log, position, Defect.INDEX, "originator/version differ")
                        )
                if seen == _CHUNK:
                    break
        if seen < _CHUNK:
            break
    count_records = count_index = 0
    with store.read() as txn:
        count_records = txn.stat(records_db)["entries"]
        count_index = txn.stat(index_db)["entries"]
    if count_records != count_index:
        problems.append(
            Problem(log, 0, Defect.INDEX, f"{count_index} index entries, {count_records} records")
        )


def iter_verified(
    target: Target, log: str = "stored_events", *, start: int = 1
) -> Iterator[LogRecord]:
    """Records of ``log`` in order; raises ``CorruptRecordError`` at the first bad one."""
    store, own_log, opened = _resolve(target)
    try:
        yield from iter_log(store, own_log or log, start=start)
    finally:
        if opened:
            store.release()
