"""The host's leadership term fences costart's appends, on both stores (ADR 0027): a
controller given the host's term claims it before reading the log, every append carries
it, and an append under an older term is refused inside its write transaction."""

from __future__ import annotations

import threading
import time
from uuid import UUID

import psycopg
import pytest
from eventsourcing.persistence import InfrastructureFactory, StoredEvent
from eventsourcing.utils import Environment
from psycopg import sql

from costart.bootstrap import Settings, bootstrap
from costart.controller import Controller
from costart.eventlog.capabilities import Capability, LogRecorder, declaring
from costart.eventlog.errors import StaleTermError
from costart.log_session import LogSession
from costart.log_writer import ControllerStoppedError
from costart.pgstore import env_for_url
from costart.store.lease import LEASE_DB, store_term
from tests.builders import USER, a_group
from tests.pg_support import base_url, fresh_schema

from .stores import Store


def _spec(name: str):  # type: ignore[no-untyped-def]
    return a_group(name).with_member("a").build()


def _recorder(store: Store) -> LogRecorder:
    factory = InfrastructureFactory.construct(Environment("costart", store.env))
    recorder = declaring(factory.application_recorder(), Capability.HOST_TERM)
    assert recorder is not None
    return recorder


def _names(store: Store) -> list[str]:
    reader = Controller(env=store.env)
    try:
        return [g.name for g in reader.groups()]
    finally:
        reader.close()


def test_a_leader_of_an_older_term_cannot_append_once_the_next_term_is_claimed(store):
    old = Controller(session=LogSession(store.env, term=1))
    old.submit(_spec("before"))
    assert old.session.term == 1
    new = Controller(session=LogSession(store.env, term=2))  # the host elected another leader
    with pytest.raises(ControllerStoppedError) as stopped:
        old.submit(_spec("stale"))
    assert isinstance(stopped.value.__cause__, StaleTermError)
    assert (stopped.value.__cause__.term, stopped.value.__cause__.current) == (1, 2)
    with pytest.raises(ControllerStoppedError):
        old.cancel("before", actor=USER)  # stopped for good
    new.submit(_spec("after"))
    assert _names(store) == ["before", "after"]
    old.close()
    new.close()


def test_a_controller_given_an_older_term_than_the_logs_is_refused_and_writes_nothing(store):
    Controller(session=LogSession(store.env, term=3)).close()
    with pytest.raises(StaleTermError, match="host term 2, the log is at host term 3"):
        Controller(session=LogSession(store.env, term=2))
    assert _recorder(store).stored_term() == 3


def test_the_same_term_again_is_the_same_leader_restarting(store):
    first = Controller(session=LogSession(store.env, term=5))
    first.submit(_spec("one"))
    first.close()
    again = Controller(session=LogSession(store.env, term=5))
    again.submit(_spec("two"))
    again.close()
    assert _names(store) == ["one", "two"]
    assert _recorder(store).stored_term() == 5


def test_an_append_is_checked_against_the_term_stored_when_it_is_written(store):
    """The check is in the append's own transaction, not at the claim: a recorder that
    claimed term 2 is refused once term 4 was claimed after it."""
    mine, theirs = _recorder(store), _recorder(store)
    mine.claim_term(2)
    mine.insert_events([StoredEvent(UUID(int=1), 1, "t", b"x")])
    theirs.claim_term(4)
    with pytest.raises(StaleTermError):
        mine.insert_events([StoredEvent(UUID(int=2), 1, "t", b"y")])
    assert theirs.max_notification_id() == 1  # type: ignore[attr-defined]
    assert mine.stored_term() == 4


@pytest.mark.parametrize("bad", [0, -1, True, "3"])
def test_a_term_that_is_not_a_positive_integer_is_refused_before_anything_is_written(store, bad):
    with pytest.raises(ValueError, match="term: the host's leadership term is a positive"):
        Controller(session=LogSession(store.env, term=bad))
    assert _recorder(store).stored_term() == 0


def test_a_term_and_a_lease_epoch_together_are_refused(store):
    with pytest.raises(ValueError, match="the host's term or a lease epoch, not both"):
        Controller(session=LogSession(store.env, term=1, epoch=1))


def test_a_store_that_cannot_be_fenced_by_a_term_says_so():
    with pytest.raises(ValueError, match="MemoryApplicationRecorder cannot be fenced"):
        Controller(session=LogSession(term=1))


def test_an_lmdb_append_waits_for_a_claim_in_flight_and_is_then_refused(tmp_path):
    """A claim and an append are ordered by LMDB's writer lock: an append that starts
    while a newer term is being written waits for it, then sees it and is refused."""
    env = {"PERSISTENCE_MODULE": "costart.store", "COSTART_LMDB_PATH": str(tmp_path / "s")}
    leader = Controller(session=LogSession(env, term=1))
    leader.submit(_spec("before"))
    written = leader.world.position
    lmdb_store = leader.recorder.store  # type: ignore[attr-defined]
    db = lmdb_store.db(LEASE_DB)
    results: list[object] = []
    txn = lmdb_store.begin(write=True)  # the next leader's claim, uncommitted
    try:
        store_term(txn, db, 2)

        def append() -> None:
            try:
                results.append(leader.submit(_spec("after")))
            except ControllerStoppedError as error:
                results.append(error.__cause__)

        writer = threading.Thread(target=append)
        writer.start()
        time.sleep(0.3)
        assert results == []  # blocked on the writer lock
        txn.commit()
    finally:
        lmdb_store.leave()
    writer.join(timeout=10)
    assert len(results) == 1 and isinstance(results[0], StaleTermError)
    leader.close()
    assert Controller(session=LogSession(env, term=2)).world.position == written


def test_a_postgresql_append_waits_for_a_claim_in_flight_and_is_then_refused(pg_url):
    with fresh_schema(pg_url) as url:
        env = env_for_url(url)
        recorder = _recorder(Store("postgresql", env, url))
        recorder.claim_term(1)
        recorder.insert_events([StoredEvent(UUID(int=1), 1, "t", b"x")])  # type: ignore[attr-defined]
        schema = env["POSTGRES_SCHEMA"]
        results: list[object] = []
        with psycopg.connect(base_url(url)) as claim:
            claim.execute(
                sql.SQL("UPDATE {}.costart_host_term SET term = 2").format(sql.Identifier(schema))
            )  # uncommitted: holds the row lock

            def append() -> None:
                try:
                    results.append(
                        recorder.insert_events(  # type: ignore[attr-defined]
                            [StoredEvent(UUID(int=2), 1, "t", b"y")]
                        )
                    )
                except StaleTermError as error:
                    results.append(error)

            writer = threading.Thread(target=append)
            writer.start()
            time.sleep(0.3)
            assert results == []  # blocked on the term row
            claim.commit()
            writer.join(timeout=10)
        assert len(results) == 1 and isinstance(results[0], StaleTermError)
        assert recorder.max_notification_id() == 1  # type: ignore[attr-defined]


def test_the_composition_root_passes_the_hosts_term_through(tmp_path):
    settings = Settings(store=str(tmp_path / "store"), cluster=None)
    first = bootstrap(settings, term=7)
    assert first.session.term == 7
    first.close()
    with pytest.raises(StaleTermError):
        bootstrap(settings, term=6)
