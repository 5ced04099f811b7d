"""Opening a controller's LMDB log for replay: read-only, never disturbing a writer.

`open_log` opens the environment with ``readonly=True`` (a copy of a production log, or
the live directory), and gives the event source, the snapshots and the store's own
integrity check (checksums, hash chain, gaps, index).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Self

from costart.eventlog.errors import CorruptRecordError, Defect
from costart.eventlog.event_reading import RecorderSource
from costart.eventlog.snapshots import SnapshotStore
from costart.store import open_readonly, verify_log
from costart.store.datafile import check_not_lost
from costart.store.recorders import LmdbAggregateRecorder, LmdbApplicationRecorder

EVENTS_LOG = "costart_events"
SNAPSHOTS_LOG = "costart_snapshots"


class LogIntegrityError(Exception):
    """The store's own check failed: ``position`` names the first bad record."""

    def __init__(self, log: str, position: int, detail: str) -> None:
        self.log = log
        self.position = position
        super().__init__(f"{log} position {position}: {detail}")


class ClosingLog:
    """A log opened read-only for replay (the LMDB and the PostgreSQL replay logs):
    its event ``source``, its ``snapshots`` (None: it keeps none), where its views are
    (``views_dir``, set by whoever knows), and the store's own `integrity_check`.
    ``with`` closes it."""

    source: RecorderSource
    snapshots: SnapshotStore | None
    views_dir: Path | None = None
    log_hash_at: Callable[[int], bytes] | None = None
    """The chain hash of the record at a position, for a hash-chained log (LMDB): a
    snapshot must name this chain. None for a log without a chain (PostgreSQL)."""

    def integrity_check(self) -> None:
        """Raise `LogIntegrityError` at the first record that fails the store's checks."""
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class ReplayLog(ClosingLog):
    def __init__(self, path: Path) -> None:
        check_not_lost(path)  # a deleted data file is damage, not "no log here"
        if not (path / "data.mdb").exists():
            raise FileNotFoundError(f"no LMDB log in {path}")
        self.path = path
        self.log_hash_at = self.record_hash
        self.views_dir: Path | None = None  # where the views of this log are, if any
        self.reader = open_readonly(path)
        logs = self.reader.logs()
        if EVENTS_LOG not in logs:
            self.reader.close()
            raise FileNotFoundError(f"{path} holds no controller log ({EVENTS_LOG})")
        store = self.reader.store
        self.recorder = LmdbApplicationRecorder(store, log_name=EVENTS_LOG, create=False)
        self.source = RecorderSource(self.recorder)
        self._snapshot_recorder = (
            LmdbAggregateRecorder(store, log_name=SNAPSHOTS_LOG, create=False)
            if SNAPSHOTS_LOG in logs
            else None
        )
        self.snapshots: SnapshotStore | None = (
            SnapshotStore(self._snapshot_recorder) if self._snapshot_recorder else None
        )

    def record_hash(self, position: int) -> bytes:
        """The chain hash of the event record at ``position``."""
        return self.recorder.record_hash(position)

    def integrity_check(self) -> None:
        """Raise `LogIntegrityError` at the first record that fails the store's checks."""
        report = verify_log(self.reader)
        if report.problems:
            # Record defects name a position; index inconsistencies follow from them.
            first = min(
                report.problems,
                key=lambda p: (p.log != EVENTS_LOG, p.defect is Defect.INDEX, p.position),
            )
            raise LogIntegrityError(first.log, first.position, f"{first.defect}: {first.detail}")

    def close(self) -> None:
        # Each recorder holds the store too: release them now, not when the collector
        # gets to them (an exception's traceback can keep one alive for a while), so the
        # store is closed when this returns and the process may open it for writing.
        self.recorder.close()
        if self._snapshot_recorder is not None:
            self._snapshot_recorder.close()
        self.reader.close()


def open_log(path: Path) -> ReplayLog:
    return ReplayLog(path)


def open_log_at(location: str, env: Mapping[str, str]) -> ReplayLog:
    """The LMDB log in directory ``location`` (`costart.replay.log_openers`'s entry;
    an LMDB log needs nothing from the environment)."""
    return ReplayLog(Path(location))


__all__ = ["CorruptRecordError", "LogIntegrityError", "ReplayLog", "open_log"]
