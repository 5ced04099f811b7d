"""The PostgreSQL backend's replay log (`costart.eventlog.replay_log`): read-only,
never disturbing a writer.

Every connection runs with ``default_transaction_read_only=on`` (the server refuses
writes, whatever the tool does) and no table is created.
"""

from __future__ import annotations

from collections.abc import Mapping

from eventsourcing.persistence import InfrastructureFactory, PersistenceError
from eventsourcing.utils import Environment

from costart.eventlog import closed_if_failed
from costart.eventlog.codec import MsgspecMapper
from costart.eventlog.errors import CorruptRecordError
from costart.eventlog.event_reading import RecorderSource, log_records
from costart.eventlog.replay_log import EVENTS_LOG, LogIntegrityError, ReplayLog
from costart.eventlog.snapshots import SNAPSHOT_STREAM_ID, SnapshotStore
from costart.pgstore.factory import Factory
from costart.pgstore.gaps import first_gap
from costart.pgstore.recorder import CostartApplicationRecorder
from costart.pgstore.settings import READ_ONLY, redact


class PgReplayLog(ReplayLog):
    """The PostgreSQL log at ``url``, ``env`` holding its settings, opened read-only."""

    def __init__(self, env: Mapping[str, str], url: str) -> None:
        self.url = redact(url)
        factory = InfrastructureFactory.construct(Environment("costart", {**env, READ_ONLY: "yes"}))
        if not isinstance(factory, Factory):
            raise ValueError("a PostgreSQL log is opened through costart.pgstore")
        self.factory = factory
        with closed_if_failed(factory):
            self._open(factory)

    def _open(self, factory: Factory) -> None:
        recorder = factory.application_recorder()
        assert isinstance(recorder, CostartApplicationRecorder)
        self.recorder = recorder
        try:
            empty = recorder.max_notification_id() is None
        except PersistenceError:  # no such table
            empty = True
        if empty:
            raise FileNotFoundError(f"{self.url} holds no controller log ({EVENTS_LOG})")
        mapper = MsgspecMapper(compressor=factory.compressor(), cipher=factory.cipher())
        self.source = RecorderSource(recorder, mapper)
        self.snapshots: SnapshotStore | None = SnapshotStore(
            factory.aggregate_recorder(purpose="snapshots")
        )

    def integrity_check(self) -> None:
        """Raise `LogIntegrityError` at the first missing position, or the first row (of
        the events, then the snapshots) that fails its checksum (ADR 0040)."""
        gap = first_gap(self.recorder)
        if gap is not None:
            raise LogIntegrityError(EVENTS_LOG, gap, "missing: positions must have no holes")
        try:
            for _ in log_records(self.recorder):
                pass
            if self.snapshots is not None:
                self.snapshots.recorder.select_events(SNAPSHOT_STREAM_ID)
        except CorruptRecordError as error:
            detail = f"{error.defect}: {error.detail}" if error.detail else str(error.defect)
            raise LogIntegrityError(error.log, error.position, detail) from None

    def close(self) -> None:
        self.factory.close()
