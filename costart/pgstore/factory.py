"""The eventsourcing infrastructure factory selected by ``PERSISTENCE_MODULE=costart.pgstore``.

The library's PostgreSQL factory (tables ``costart_events``, ``costart_snapshots``,
``costart_tracking`` for the Controller), with the application recorder replaced by ours
(gapless positions, fencing) and the two settings of `costart.pgstore.settings`.
"""

from __future__ import annotations

from eventsourcing.persistence import ApplicationRecorder
from eventsourcing.postgres import PostgresFactory
from eventsourcing.utils import Environment, EnvType, strtobool

from costart.pgstore.create import AggregateRecorder, ProcessRecorder, TrackingRecorder
from costart.pgstore.recorder import CostartApplicationRecorder
from costart.pgstore.settings import LEASE_EPOCH, READ_ONLY

READ_ONLY_OPTIONS = "-c default_transaction_read_only=on"


class Factory(PostgresFactory):
    """Builds PostgreSQL recorders; see `costart.pgstore.settings` for the settings."""

    aggregate_recorder_class = AggregateRecorder
    application_recorder_class = CostartApplicationRecorder
    tracking_recorder_class = TrackingRecorder
    process_recorder_class = ProcessRecorder

    def __init__(self, env: Environment | EnvType | None) -> None:
        super().__init__(env)
        self.read_only = strtobool(self.env.get(READ_ONLY) or "no")
        epoch = self.env.get(LEASE_EPOCH)
        try:
            self.epoch = int(epoch) if epoch else None
        except ValueError:
            raise OSError(f"{LEASE_EPOCH} is not an integer: {epoch!r}") from None
        if self.read_only:
            # Set at connect time, so the server enforces it for every transaction.
            kwargs = self.datastore.pool.kwargs
            assert isinstance(kwargs, dict), "the library passes connection kwargs as a dict"
            kwargs["options"] = READ_ONLY_OPTIONS

    def env_create_table(self) -> bool:
        return not self.read_only and super().env_create_table()

    def application_recorder(self) -> ApplicationRecorder:
        if self.env.get(self.APPLICATION_RECORDER_TOPIC):
            return super().application_recorder()
        prefix = self.env.name.lower() or "stored"
        recorder = CostartApplicationRecorder(
            self.datastore, events_table_name=f"{prefix}_events", epoch=self.epoch
        )
        if self.env_create_table():
            recorder.create_table()
        return recorder
