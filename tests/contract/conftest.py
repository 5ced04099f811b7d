"""One store contract, two backends: every test here that takes ``store`` runs on the
LMDB store and on PostgreSQL (a fresh directory / a fresh schema each time)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from eventsourcing.persistence import InfrastructureFactory
from eventsourcing.utils import Environment

from costart.eventlog.codec import MsgspecMapper
from costart.eventlog.event_reading import RecorderSource
from costart.eventlog.snapshots import SnapshotStore
from costart.pgstore import env_for_url
from tests.pg_support import fresh_schema


@dataclass
class Store:
    """A backend under test: the environment a Controller is built with."""

    name: str
    env: dict[str, str]
    location: str  # a directory or a URL: what `--store` takes

    def source(self) -> RecorderSource:
        return RecorderSource.from_env(self.env)

    def snapshots(self) -> SnapshotStore:
        factory = InfrastructureFactory.construct(Environment("costart", self.env))
        return SnapshotStore(factory.aggregate_recorder(purpose="snapshots"))

    def mapper(self) -> MsgspecMapper:
        return MsgspecMapper()


@pytest.fixture(params=["lmdb", "postgresql"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    if request.param == "lmdb":
        path = tmp_path / "store"
        env = {"PERSISTENCE_MODULE": "costart.store", "COSTART_LMDB_PATH": str(path)}
        yield Store("lmdb", env, str(path))
        return
    with fresh_schema(request.getfixturevalue("pg_url")) as url:
        yield Store("postgresql", env_for_url(url), url)
