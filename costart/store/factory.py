"""The eventsourcing infrastructure factory selected by ``PERSISTENCE_MODULE=costart.store``.

Names follow the library's Postgres module: with application name ``App`` the
events log is ``app_events``, snapshots ``app_snapshots`` and tracking
``app_tracking``; without a name, ``stored_events`` and ``notification_tracking``.
All of them live in the one environment at ``COSTART_LMDB_PATH``, so several
applications (and processes) can share it, and a process recorder's events and
tracking commit in one transaction.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from eventsourcing.persistence import (
    AggregateRecorder,
    ApplicationRecorder,
    InfrastructureFactory,
    ProcessRecorder,
)
from eventsourcing.utils import resolve_topic

from costart.store.lmdbenv import LmdbStore, open_store
from costart.store.recorders import (
    LmdbAggregateRecorder,
    LmdbApplicationRecorder,
    LmdbProcessRecorder,
    LmdbTrackingRecorder,
)
from costart.store.settings import create_from_env, settings_from_env

if TYPE_CHECKING:
    from eventsourcing.utils import Environment, EnvType


class Factory(InfrastructureFactory[LmdbTrackingRecorder]):
    """Builds LMDB recorders from environment settings (see ``costart.store.settings``)."""

    def __init__(self, env: Environment | EnvType | None) -> None:
        super().__init__(env)
        self.settings = settings_from_env(self.env)
        self._store: LmdbStore | None = None
        self._store_lock = threading.Lock()

    @property
    def store(self) -> LmdbStore:
        """The shared store, opened on first use (a mapper alone needs none)."""
        with self._store_lock:
            if self._store is None:
                self._store = open_store(self.settings)
            return self._store

    def _prefix(self, default: str) -> str:
        return self.env.name.lower() or default

    def aggregate_recorder(self, purpose: str = "events") -> AggregateRecorder:
        return LmdbAggregateRecorder(
            self.store,
            log_name=f"{self._prefix('stored')}_{purpose}",
            create=create_from_env(self.env),
        )

    def application_recorder(self) -> ApplicationRecorder:
        cls: type[LmdbApplicationRecorder] = LmdbApplicationRecorder
        topic = self.env.get(self.APPLICATION_RECORDER_TOPIC)
        if topic:
            cls = resolve_topic(topic)
            assert issubclass(cls, LmdbApplicationRecorder), cls
        return cls(
            self.store,
            log_name=f"{self._prefix('stored')}_events",
            create=create_from_env(self.env),
        )

    def tracking_recorder(
        self, tracking_recorder_class: type[LmdbTrackingRecorder] | None = None
    ) -> LmdbTrackingRecorder:
        cls = tracking_recorder_class
        if cls is None:
            topic = self.env.get(self.TRACKING_RECORDER_TOPIC)
            cls = resolve_topic(topic) if topic else LmdbTrackingRecorder
        assert cls is not None and issubclass(cls, LmdbTrackingRecorder), cls
        return cls(
            self.store,
            tracking_name=f"{self._prefix('notification')}_tracking",
            create=create_from_env(self.env),
        )

    def process_recorder(self) -> ProcessRecorder:
        cls: type[LmdbProcessRecorder] = LmdbProcessRecorder
        topic = self.env.get(self.PROCESS_RECORDER_TOPIC)
        if topic:
            cls = resolve_topic(topic)
            assert issubclass(cls, LmdbProcessRecorder), cls
        return cls(
            self.store,
            log_name=f"{self._prefix('stored')}_events",
            tracking_name=f"{self._prefix('notification')}_tracking",
            create=create_from_env(self.env),
        )

    def close(self) -> None:
        """Flush (in async mode) and release this factory's hold on the store.

        Recorders it made keep their own hold until closed or collected.
        """
        with self._store_lock:
            store, self._store = self._store, None
        if store is not None:
            try:
                store.sync()
            finally:
                store.release()
