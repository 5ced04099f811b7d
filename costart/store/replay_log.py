"""The LMDB backend's replay log (`costart.eventlog.replay_log`): read-only, never
disturbing a writer.

`open_log` opens the environment with ``readonly=True`` (a copy of a production log, or
the live directory), and gives the event source, the snapshots and the store's own
integrity check (checksums, hash chain, gaps, index).
"""

from __future__ import annotations

from pathlib import Path

from costart.eventlog.errors import Defect
from costart.eventlog.event_reading import RecorderSource
from costart.eventlog.replay_log import EVENTS_LOG, SNAPSHOTS_LOG, LogIntegrityError, ReplayLog
from costart.eventlog.snapshots import SnapshotStore
from costart.lmdbkit.datafile import check_not_lost
from costart.store.integrity import verify_log
from costart.store.recorders import LmdbAggregateRecorder, LmdbApplicationRecorder
from costart.store.whole_log import open_readonly


class LmdbReplayLog(ReplayLog):
    """The LMDB log in a directory, opened read-only."""

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


def open_log(path: Path) -> LmdbReplayLog:
    return LmdbReplayLog(path)
