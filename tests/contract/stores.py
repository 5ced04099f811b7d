"""The backends the contract tests run on, each as a `Store`: the environment a
Controller is built with, and how a test reads what a controller wrote there or
restarts on it. One factory per backend (`memory_store`, `lmdb_store`, `pg_store`)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from eventsourcing.persistence import InfrastructureFactory
from eventsourcing.utils import Environment

from costart.controller import Controller
from costart.eventlog.backends import MEMORY_MODULE, PERSISTENCE_MODULE
from costart.eventlog.event_reading import RecorderSource
from costart.eventlog.snapshots import SnapshotStore
from costart.pgstore import env_for_url
from tests.pg_support import fresh_schema


@dataclass
class Store:
    """A backend under test whose log outlives the controller that wrote it: read and
    restarted on from ``env`` alone. ``location`` is what ``--store`` takes."""

    name: str
    env: dict[str, str]
    location: str

    def source(self, writer: Controller | None = None) -> RecorderSource:
        """The log ``writer`` wrote (any controller on this store)."""
        return RecorderSource.from_env(self.env)

    def snapshots(self, writer: Controller | None = None) -> SnapshotStore:
        factory = InfrastructureFactory.construct(Environment("costart", self.env))
        return SnapshotStore(factory.aggregate_recorder(purpose="snapshots"))

    def restarted(self, writer: Controller) -> Controller:
        """A controller started over the log ``writer`` left (a process restarted)."""
        return Controller(env=self.env)


class InProcessStore(Store):
    """A log that lives as long as its process (memory): read through the controller
    that wrote it, restarted on by `Controller`'s ``restart_of``."""

    def source(self, writer: Controller | None = None) -> RecorderSource:
        assert writer is not None, "an in-process log is read through its writer"
        return RecorderSource(writer.recorder)

    def snapshots(self, writer: Controller | None = None) -> SnapshotStore:
        assert writer is not None, "an in-process log is read through its writer"
        return writer.session.snapshots_store

    def restarted(self, writer: Controller) -> Controller:
        return Controller(env=self.env, restart_of=writer)


@contextmanager
def memory_store() -> Iterator[Store]:
    yield InProcessStore("memory", {PERSISTENCE_MODULE: MEMORY_MODULE}, "")


@contextmanager
def lmdb_store(tmp_path: Path) -> Iterator[Store]:
    path = tmp_path / "store"
    env = {PERSISTENCE_MODULE: "costart.store", "COSTART_LMDB_PATH": str(path)}
    yield Store("lmdb", env, str(path))


@contextmanager
def pg_store(server_url: str) -> Iterator[Store]:
    """A fresh schema on the server at ``server_url``, dropped afterwards."""
    with fresh_schema(server_url) as url:
        yield Store("postgresql", env_for_url(url), url)
