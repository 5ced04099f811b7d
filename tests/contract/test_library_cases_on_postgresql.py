"""The library's own recorder and factory test cases, run against costart.pgstore on a
real PostgreSQL server -- the same cases `tests/store/test_conformance.py` runs against
the LMDB store.

Subclassed from ``eventsourcing.tests.persistence`` (imported as a module so pytest does
not collect the abstract bases). Each test gets a fresh schema, dropped afterwards. The
application recorder is ours (gapless positions; unfenced, as tools and tests use it);
the others are the library's.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from uuid import uuid4

import pytest
from eventsourcing.persistence import (
    AggregateRecorder,
    ApplicationRecorder,
    InfrastructureFactory,
    ProcessRecorder,
    StoredEvent,
    TrackingRecorder,
)
from eventsourcing.postgres import (
    PostgresAggregateRecorder,
    PostgresDatastore,
    PostgresProcessRecorder,
    PostgresTrackingRecorder,
)
from eventsourcing.tests import persistence as lib
from eventsourcing.utils import Environment

from costart.pgstore import CostartApplicationRecorder, Factory, create, env_for_url
from tests.pg_support import fresh_schema


class WithDatastore:
    """Mixin: a datastore on a fresh schema per test."""

    url: str
    pool_size = 4  # the library's concurrency cases run several writer threads

    @pytest.fixture(autouse=True)
    def _schema(self, pg_url: str) -> Iterator[None]:
        with fresh_schema(pg_url) as url:
            self.url = url
            yield

    def setUp(self) -> None:
        env = env_for_url(self.url)
        self.datastore = PostgresDatastore(
            env["POSTGRES_DBNAME"],
            env["POSTGRES_HOST"],
            env["POSTGRES_PORT"],
            env["POSTGRES_USER"],
            env["POSTGRES_PASSWORD"],
            schema=env["POSTGRES_SCHEMA"],
            pool_size=self.pool_size,
            max_overflow=10,
            originator_id_type=getattr(self, "originator_id_type", "uuid"),
        )
        super().setUp()  # type: ignore[misc]

    def tearDown(self) -> None:
        super().tearDown()  # type: ignore[misc]
        self.datastore.close()

    def made(self, recorder: Any) -> Any:
        recorder.create_table()
        return recorder


class WithTextOriginatorID:
    originator_id_type = "text"

    def new_originator_id(self) -> str:
        return "test-" + str(uuid4())


class TestAggregateRecorder(WithDatastore, lib.AggregateRecorderTestCase):
    def create_recorder(self) -> AggregateRecorder:
        recorder = PostgresAggregateRecorder(self.datastore, events_table_name="snapshots")
        return self.made(recorder)  # type: ignore[no-any-return]


class TestApplicationRecorder(
    WithDatastore, lib.ApplicationRecorderTestCase[CostartApplicationRecorder]
):
    def create_recorder(self) -> CostartApplicationRecorder:
        recorder = CostartApplicationRecorder(self.datastore, events_table_name="costart_events")
        return self.made(recorder)  # type: ignore[no-any-return]

    def test_insert_subscribe(self) -> None:
        self.optional_test_insert_subscribe()

    def test_insert_subscribe_from_existing_position(self) -> None:
        recorder = self.create_recorder()
        originator_id = self.new_originator_id()
        recorder.insert_events(
            [StoredEvent(originator_id, v, "topic0", b"state0") for v in range(1, 6)]
        )
        self.optional_test_insert_subscribe(initial_position=5)


class TestApplicationRecorderWithTextOriginatorID(WithTextOriginatorID, TestApplicationRecorder):
    pass


class TestTrackingRecorder(WithDatastore, lib.TrackingRecorderTestCase):
    def create_recorder(self) -> TrackingRecorder:
        recorder = PostgresTrackingRecorder(self.datastore, tracking_table_name="tracking")
        return self.made(recorder)  # type: ignore[no-any-return]


class TestProcessRecorder(WithDatastore, lib.ProcessRecorderTestCase):
    def create_recorder(self) -> ProcessRecorder:
        recorder = PostgresProcessRecorder(
            self.datastore, events_table_name="events", tracking_table_name="tracking"
        )
        return self.made(recorder)  # type: ignore[no-any-return]


class TestNonInterleavingNotificationIDs(WithDatastore, lib.NonInterleavingNotificationIDsBaseCase):
    def create_recorder(self) -> ApplicationRecorder:
        recorder = CostartApplicationRecorder(self.datastore, events_table_name="costart_events")
        return self.made(recorder)  # type: ignore[no-any-return]


class TestInfrastructureFactory(WithDatastore, lib.InfrastructureFactoryTestCase[Factory]):
    class TrackingRecorderSubclass(PostgresTrackingRecorder):
        pass

    def setUp(self) -> None:
        self.env = Environment("TestCase", env_for_url(self.url))
        lib.InfrastructureFactoryTestCase.setUp(self)

    def tearDown(self) -> None:
        lib.InfrastructureFactoryTestCase.tearDown(self)

    def expected_factory_class(self) -> type[Factory]:
        return Factory

    def expected_aggregate_recorder_class(self) -> type[AggregateRecorder]:
        return create.AggregateRecorder

    def expected_application_recorder_class(self) -> type[ApplicationRecorder]:
        return CostartApplicationRecorder

    def expected_tracking_recorder_class(self) -> type[TrackingRecorder]:
        return create.TrackingRecorder

    def tracking_recorder_subclass(self) -> type[TrackingRecorder]:
        return self.TrackingRecorderSubclass

    def expected_process_recorder_class(self) -> type[ProcessRecorder]:
        return create.ProcessRecorder

    def test_a_url_selects_this_module(self) -> None:
        factory = InfrastructureFactory.construct(Environment("costart", env_for_url(self.url)))
        try:
            self.assertIsInstance(factory, Factory)
        finally:
            factory.close()


del WithDatastore, WithTextOriginatorID
