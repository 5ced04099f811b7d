"""The library's own recorder and factory test cases, run against costart.store.

Subclassed from ``eventsourcing.tests.persistence`` (imported as a module so
pytest does not collect the abstract bases). Each test gets a fresh LMDB
environment in a temp dir, opened with real fsync (durability ``sync``).
"""

from __future__ import annotations

from typing import Any, cast
from uuid import uuid4

from eventsourcing.persistence import (
    AggregateRecorder,
    ApplicationRecorder,
    InfrastructureFactory,
    ProcessRecorder,
    StoredEvent,
    TrackingRecorder,
)
from eventsourcing.tests import persistence as lib
from eventsourcing.utils import Environment

from costart.store import (
    Factory,
    LmdbAggregateRecorder,
    LmdbApplicationRecorder,
    LmdbProcessRecorder,
    LmdbStore,
    LmdbTrackingRecorder,
)
from costart.store.settings import PATH

from .support import TempStores


class WithStore:
    """Mixin: a fresh store per test, released and deleted afterwards."""

    def setUp(self) -> None:
        self.stores = TempStores()
        self._recorders: list[Any] = []
        super().setUp()  # type: ignore[misc]

    def tearDown(self) -> None:
        super().tearDown()  # type: ignore[misc]
        for recorder in self._recorders:
            recorder.close()
        self.stores.cleanup()

    def store(self) -> LmdbStore:
        if not hasattr(self, "_store"):
            self._store = self.stores.open()
        return self._store

    def keep(self, recorder: Any) -> Any:
        self._recorders.append(recorder)
        return recorder


class WithTextOriginatorID:
    def new_originator_id(self) -> str:
        return "test-" + str(uuid4())


class TestAggregateRecorder(WithStore, lib.AggregateRecorderTestCase):
    def create_recorder(self) -> AggregateRecorder:
        return cast(
            AggregateRecorder,
            self.keep(LmdbAggregateRecorder(self.store(), log_name="stored_snapshots")),
        )


class TestAggregateRecorderWithTextOriginatorID(WithTextOriginatorID, TestAggregateRecorder):
    pass


class TestApplicationRecorder(WithStore, lib.ApplicationRecorderTestCase[LmdbApplicationRecorder]):
    def create_recorder(self) -> LmdbApplicationRecorder:
        return cast(LmdbApplicationRecorder, self.keep(LmdbApplicationRecorder(self.store())))

    def test_insert_subscribe(self) -> None:
        # Optional in the library; postgres runs it, and so do we.
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


class TestTrackingRecorder(WithStore, lib.TrackingRecorderTestCase):
    def create_recorder(self) -> TrackingRecorder:
        return cast(TrackingRecorder, self.keep(LmdbTrackingRecorder(self.store())))


class TestProcessRecorder(WithStore, lib.ProcessRecorderTestCase):
    def create_recorder(self) -> ProcessRecorder:
        return cast(ProcessRecorder, self.keep(LmdbProcessRecorder(self.store())))


class TestProcessRecorderWithTextOriginatorID(WithTextOriginatorID, TestProcessRecorder):
    pass


class TestNonInterleavingNotificationIDs(WithStore, lib.NonInterleavingNotificationIDsBaseCase):
    def create_recorder(self) -> ApplicationRecorder:
        return cast(ApplicationRecorder, self.keep(LmdbApplicationRecorder(self.store())))


class TestInfrastructureFactory(WithStore, lib.InfrastructureFactoryTestCase[Factory]):
    class TrackingRecorderSubclass(LmdbTrackingRecorder):
        pass

    def setUp(self) -> None:
        self.stores = TempStores()
        self._recorders = []
        self.env = Environment("TestCase")
        self.env[InfrastructureFactory.PERSISTENCE_MODULE] = "costart.store"
        self.env[PATH] = self.stores.path()
        lib.InfrastructureFactoryTestCase.setUp(self)

    def tearDown(self) -> None:
        lib.InfrastructureFactoryTestCase.tearDown(self)
        self.stores.cleanup()

    def expected_factory_class(self) -> type[Factory]:
        return Factory

    def expected_aggregate_recorder_class(self) -> type[AggregateRecorder]:
        return LmdbAggregateRecorder

    def expected_application_recorder_class(self) -> type[ApplicationRecorder]:
        return LmdbApplicationRecorder

    def expected_tracking_recorder_class(self) -> type[TrackingRecorder]:
        return LmdbTrackingRecorder

    def tracking_recorder_subclass(self) -> type[TrackingRecorder]:
        return self.TrackingRecorderSubclass

    def expected_process_recorder_class(self) -> type[ProcessRecorder]:
        return LmdbProcessRecorder

    def test_construct_raises_environment_error_when_path_missing(self) -> None:
        del self.env[PATH]
        with self.assertRaises(EnvironmentError) as cm:
            InfrastructureFactory.construct(self.env)
        self.assertEqual(
            cm.exception.args[0],
            "LMDB store path not found in environment with keys: "
            "TESTCASE_COSTART_LMDB_PATH, COSTART_LMDB_PATH",
        )

    def test_app_prefixed_settings_win(self) -> None:
        self.env["TESTCASE_COSTART_LMDB_DURABILITY"] = "async"
        self.env["COSTART_LMDB_DURABILITY"] = "sync"
        self.env["TESTCASE_COSTART_LMDB_MAP_SIZE"] = str(1 << 20)
        factory = Factory(self.env)
        self.assertEqual(factory.settings.durability, "async")
        self.assertEqual(factory.settings.map_size, 1 << 20)

    def test_invalid_settings(self) -> None:
        for key, value in [
            ("COSTART_LMDB_MAP_SIZE", "big"),
            ("COSTART_LMDB_MAP_SIZE", "-1"),
            ("COSTART_LMDB_DURABILITY", "maybe"),
            ("COSTART_LMDB_POLL_INTERVAL", "soon"),
        ]:
            env = Environment("TestCase", dict(self.env))
            env[key] = value
            with self.assertRaises(EnvironmentError):
                Factory(env)

    def test_named_logs_per_application(self) -> None:
        self.env.name = "App1"
        app1 = self.factory.application_recorder()
        snapshots = self.factory.aggregate_recorder(purpose="snapshots")
        tracking = self.factory.tracking_recorder()
        assert isinstance(app1, LmdbApplicationRecorder)
        assert isinstance(snapshots, LmdbAggregateRecorder)
        assert isinstance(tracking, LmdbTrackingRecorder)
        self.assertEqual(app1.log.name, "app1_events")
        self.assertEqual(snapshots.log.name, "app1_snapshots")
        self.assertIs(app1.store, snapshots.store)  # one environment per path
        self.env.name = ""
        default = self.factory.application_recorder()
        assert isinstance(default, LmdbApplicationRecorder)
        self.assertEqual(default.log.name, "stored_events")


del WithStore, WithTextOriginatorID
