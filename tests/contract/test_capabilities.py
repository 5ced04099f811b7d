"""The recorder capability contract (`costart.eventlog.capabilities`) on every backend,
and the one registry that picks a backend by configuration.

Each backend's application recorder is built the way a Controller builds it (from its
environment); each capability it declares is held to the contract in `LogRecorder`'s
docstring, and each one it does not declare refuses its method by name."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from uuid import UUID

import pytest
from eventsourcing.persistence import ApplicationRecorder, InfrastructureFactory, StoredEvent
from eventsourcing.utils import Environment

from costart.controller import Controller
from costart.eventlog.backends import (
    MEMORY_MODULE,
    REGISTRY,
    LeaselessBackend,
    NoLeaseError,
    backend_at,
    backend_for,
)
from costart.eventlog.capabilities import (
    Capability,
    LogRecorder,
    MissingCapabilityError,
    WriteChain,
    capabilities_of,
)
from costart.eventlog.codec import MsgspecMapper
from costart.eventlog.errors import CorruptRecordError, Defect, StaleTermError
from costart.eventlog.event_reading import log_records, read_events
from costart.pgstore import env_for_url
from tests.builders import USER, a_group
from tests.pg_support import fresh_schema

ALL = Capability.VERIFIED_READS | Capability.RECORD_CURSOR | Capability.RECORD_HASHES
ALL |= Capability.DEFERRED_INSERTS | Capability.HOST_TERM
# What each backend's application recorder declares: a change here is a design change.
DECLARED = {
    "lmdb": ALL,
    "postgresql": Capability.RECORD_HASHES | Capability.HOST_TERM,
    "memory": Capability.RECORD_CURSOR,
}


@dataclass
class Opened:
    name: str
    env: dict[str, str]
    factory: InfrastructureFactory[object]
    recorder: ApplicationRecorder


@pytest.fixture(params=sorted(DECLARED))
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Opened]:
    def opened(env: dict[str, str]) -> Opened:
        factory = InfrastructureFactory.construct(Environment("costart", env))
        return Opened(request.param, env, factory, factory.application_recorder())

    if request.param == "postgresql":
        with fresh_schema(request.getfixturevalue("pg_url")) as url:
            opened_pg = opened(env_for_url(url))
            opened_pg.recorder.create_table()  # type: ignore[attr-defined]
            yield opened_pg
            opened_pg.factory.close()
        return
    env = {"PERSISTENCE_MODULE": MEMORY_MODULE}
    if request.param == "lmdb":
        env = {"PERSISTENCE_MODULE": "costart.store", "COSTART_LMDB_PATH": str(tmp_path)}
    chosen = opened(env)
    yield chosen
    chosen.factory.close()


def _events(first_version: int, count: int) -> list[StoredEvent]:
    oid = UUID(int=7)
    return [
        StoredEvent(oid, v, "costart.test:Event", f"body {v}".encode())
        for v in range(first_version, first_version + count)
    ]


def _has(backend: Opened, capability: Capability) -> bool:
    return capability in capabilities_of(backend.recorder)


def test_each_backend_declares_what_it_can_do(backend):
    assert capabilities_of(backend.recorder) == DECLARED[backend.name]


def test_the_record_cursor_reads_what_the_notifications_hold(backend):
    backend.recorder.insert_events(_events(1, 5))
    if not _has(backend, Capability.RECORD_CURSOR):
        with pytest.raises(MissingCapabilityError, match="RECORD_CURSOR"):
            backend.recorder.iter_records(1)  # type: ignore[attr-defined]
        return
    recorder = backend.recorder
    assert isinstance(recorder, LogRecorder)
    pages = [(n.id, n.topic, n.state) for n in backend.recorder.select_notifications(1, 100)]
    assert [(r.id, r.topic, r.state) for r in recorder.iter_records(1)] == pages
    assert [r.id for r in recorder.iter_records(0)] == [1, 2, 3, 4, 5]
    assert [r.id for r in recorder.iter_records(4)] == [4, 5]
    assert list(recorder.iter_records(6)) == []


def test_a_record_hash_names_one_record_and_a_missing_one_is_a_gap(backend):
    backend.recorder.insert_events(_events(1, 3))
    recorder = backend.recorder
    if not _has(backend, Capability.RECORD_HASHES):
        with pytest.raises(MissingCapabilityError, match="RECORD_HASHES"):
            recorder.record_hash(1)  # type: ignore[attr-defined]
        return
    assert isinstance(recorder, LogRecorder)
    hashes = [recorder.record_hash(p) for p in (1, 2, 3)]
    assert all(isinstance(h, bytes) and len(h) >= 16 for h in hashes)
    assert len(set(hashes)) == 3
    assert [recorder.record_hash(p) for p in (1, 2, 3)] == hashes
    with pytest.raises(CorruptRecordError) as missing:
        recorder.record_hash(4)
    assert missing.value.defect is Defect.GAP and missing.value.position == 4


def test_deferred_inserts_land_in_queue_order_and_a_broken_chain_stops_the_rest(backend):
    recorder = backend.recorder
    if not _has(backend, Capability.DEFERRED_INSERTS):
        with pytest.raises(MissingCapabilityError, match="DEFERRED_INSERTS"):
            recorder.insert_events_deferred(_events(1, 1), WriteChain())  # type: ignore[attr-defined]
        return
    assert isinstance(recorder, LogRecorder)
    chain = WriteChain()
    first = recorder.insert_events_deferred(_events(1, 2), chain)
    second = recorder.insert_events_deferred(_events(3, 1), chain)
    assert first.wait() == [1, 2]
    assert second.wait() == [3]
    duplicate = recorder.insert_events_deferred(_events(3, 1), chain)  # version 3 again
    after = recorder.insert_events_deferred(_events(4, 1), chain)
    with pytest.raises(Exception) as failed:
        duplicate.wait()
    with pytest.raises(Exception):  # noqa: B017 (any error: the chain is broken)
        after.wait()
    assert chain.broken is failed.value
    assert recorder.max_notification_id() == 3


def test_a_claimed_host_term_fences_older_terms(backend):
    recorder = backend.recorder
    if not _has(backend, Capability.HOST_TERM):
        with pytest.raises(MissingCapabilityError, match="HOST_TERM"):
            recorder.claim_term(1)  # type: ignore[attr-defined]
        return
    assert isinstance(recorder, LogRecorder)
    assert recorder.stored_term() == 0 and recorder.term is None
    recorder.claim_term(3)
    assert recorder.stored_term() == 3 and recorder.term == 3
    recorder.insert_events(_events(1, 1))
    with pytest.raises(StaleTermError):
        recorder.claim_term(2)
    assert recorder.stored_term() == 3


def test_a_capability_declared_without_its_method_is_refused_when_the_class_is_made():
    with pytest.raises(TypeError, match=r"iter_records is missing for .* RECORD_CURSOR"):

        class Promises(LogRecorder):
            capabilities = Capability.RECORD_CURSOR


def test_a_capability_method_without_its_declaration_is_refused_when_the_class_is_made():
    with pytest.raises(TypeError, match=r"record_hash is implemented without .* RECORD_HASHES"):

        class Hides(LogRecorder):
            def record_hash(self, position: int) -> bytes | None:
                return None


def test_a_recorder_of_the_library_declares_nothing():
    assert capabilities_of(object()) == Capability.NONE


def test_the_registry_picks_each_backend_by_its_persistence_module():
    for module in REGISTRY:
        assert backend_for({"PERSISTENCE_MODULE": module}).module == module
    assert backend_for({}).module == MEMORY_MODULE
    sqlite = backend_for({"PERSISTENCE_MODULE": "eventsourcing.sqlite"})
    assert isinstance(sqlite, LeaselessBackend) and sqlite.module == "eventsourcing.sqlite"
    assert backend_for({"PERSISTENCE_MODULE": "costart.store"}).data_file == "data.mdb"


def test_a_store_without_a_lease_cannot_be_led():
    with pytest.raises(NoLeaseError, match=r"eventsourcing\.sqlite"):
        backend_for({"PERSISTENCE_MODULE": "eventsourcing.sqlite"}).lead({}, 10**9)


def test_the_lmdb_backend_leads_with_the_lease_in_its_environment(tmp_path):
    env = {"PERSISTENCE_MODULE": "costart.store", "COSTART_LMDB_PATH": str(tmp_path)}
    lead = backend_for(env).lead(env, 2 * 10**9)
    try:
        assert lead.lease.try_acquire() == 1
        assert lead.writer_epoch(1) == 1 and lead.fenced_env(1) == env
    finally:
        lead.lease.release()
        lead.factory.close()


def test_exactly_one_backend_takes_each_store_location():
    directory = backend_at("var/store")
    assert directory.module == "costart.store"
    env = directory.location_env("var/store", {"X": "1"})
    assert env == {
        "X": "1",
        "PERSISTENCE_MODULE": "costart.store",
        "COSTART_LMDB_PATH": "var/store",
    }
    # The environment may keep another module for a directory (the library's SQLite).
    sqlite = directory.location_env("d", {"PERSISTENCE_MODULE": "eventsourcing.sqlite"})
    assert sqlite["PERSISTENCE_MODULE"] == "eventsourcing.sqlite"
    url = "postgresql://alice:secret@db.example:5433/costart"
    server = backend_at(url)
    assert server.module == "costart.pgstore"
    assert server.describe(url) == "postgresql://alice:***@db.example:5433/costart"
    assert server.location_env(url, {})["PERSISTENCE_MODULE"] == "costart.pgstore"
    with pytest.raises(ValueError, match=r"'mysql://db/x': one store backend must take it"):
        backend_at("mysql://db/x")


def test_a_reader_of_the_whole_log_takes_the_record_cursor_when_one_is_declared(
    tmp_path, monkeypatch
):
    """Replay's hot path: on a store with a cursor, reading the log to its end never
    pages through notifications (the cursor is checked and far cheaper)."""
    lmdb_env = {"PERSISTENCE_MODULE": "costart.store", "COSTART_LMDB_PATH": str(tmp_path)}
    for env in ({}, lmdb_env):
        controller = Controller(env=env)
        try:
            controller.submit(a_group("g").with_member("a").build(), actor=USER)
            recorder = controller.recorder
            assert Capability.RECORD_CURSOR in capabilities_of(recorder)
            expected = list(read_events(recorder, MsgspecMapper()))
            assert expected and expected[-1][0] == controller.world.position

            def no_pages(*args: object, **kwargs: object) -> object:
                raise AssertionError("paged through notifications")

            monkeypatch.setattr(recorder, "select_notifications", no_pages)
            assert list(read_events(recorder, MsgspecMapper())) == expected
            assert [r.id for r in log_records(recorder)] == [p for p, _ in expected]
        finally:
            monkeypatch.undo()
            controller.close()
