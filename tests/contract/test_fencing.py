"""Lease and fencing on PostgreSQL: the epoch is checked inside the append's own
transaction, so once a new epoch is committed no append of the old one can land.

(The LMDB store's lease lives with its HA work, ADR 0009; these cases are written
against the lease API both share and take the LMDB backend once it is merged.)
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from uuid import UUID

import psycopg
import pytest
from eventsourcing.persistence import StoredEvent
from psycopg import sql

from costart.controller import Controller
from costart.log_writer import ControllerStoppedError
from costart.pgstore import FencedError, env_for_url
from costart.pgstore.ha import Standby, fenced_env, open_factory, open_lease
from costart.pgstore.recorder import CostartApplicationRecorder
from tests.builders import USER, a_group
from tests.pg_support import base_url, fresh_schema


@pytest.fixture
def url(pg_url: str) -> Iterator[str]:
    with fresh_schema(pg_url) as schema_url:
        yield schema_url


def _leader(env: dict[str, str], duration_ms: int = 300) -> tuple[Controller, int]:
    lease = open_lease(open_factory(env), duration_ms=duration_ms)
    epoch = lease.try_acquire()
    assert epoch is not None
    return Controller(env=fenced_env(env, epoch)), epoch


HELD_MS = 60_000  # a lease that cannot expire during a test, however loaded the machine
TAKE_WITHIN_S = 30.0


def taken(lease) -> int:
    """Try ``lease`` until it is acquired (a bounded wait for the holder's lease to run
    out, not a sleep that a loaded machine may outrun); its epoch."""
    deadline = time.monotonic() + TAKE_WITHIN_S
    while (epoch := lease.try_acquire()) is None:
        assert time.monotonic() < deadline, f"lease not acquired within {TAKE_WITHIN_S}s"
        time.sleep(0.02)
    return epoch


def test_a_held_lease_is_not_taken_and_an_expired_one_is_taken_with_the_next_epoch(url):
    env = env_for_url(url)
    held = open_lease(open_factory(env), duration_ms=HELD_MS)
    assert held.try_acquire() == 1
    assert open_lease(open_factory(env), duration_ms=HELD_MS).try_acquire() is None
    assert held.renew()
    held.release()
    first = open_lease(open_factory(env), duration_ms=200)
    second = open_lease(open_factory(env), duration_ms=200)
    asked = time.monotonic()  # before the lease starts: its end is at least 0.2 s after
    assert first.try_acquire() == 2
    assert taken(second) == 3
    assert time.monotonic() - asked >= 0.2  # never before the holder's lease ran out
    assert not first.renew() and first.epoch is None
    second.release()
    assert open_lease(open_factory(env)).try_acquire() == 4  # released: no waiting


def test_a_deposed_leader_cannot_append_once_a_standby_took_the_lease(url):
    env = env_for_url(url)
    leader, epoch = _leader(env)
    leader.submit(a_group("before").with_member("a").build())
    written = leader.world.position
    # The leader "pauses" (writes nothing) until its lease runs out and is taken.
    assert taken(open_lease(open_factory(env))) == epoch + 1
    with pytest.raises(ControllerStoppedError) as stopped:
        leader.submit(a_group("after").with_member("a").build())
    assert isinstance(stopped.value.__cause__, FencedError)
    assert (stopped.value.__cause__.epoch, stopped.value.__cause__.current) == (epoch, epoch + 1)
    with pytest.raises(ControllerStoppedError):
        leader.cancel("before", actor=USER)  # stopped for good
    assert Controller(env=env).world.position == written


def test_an_append_started_before_a_takeover_commits_before_it_and_none_after(url):
    """The epoch check holds a share lock on the lease row until the append commits, so
    a takeover waits for an append in flight; an append that starts while a takeover
    is uncommitted waits for it, then sees the new epoch and is refused."""
    env = env_for_url(url)
    factory = open_factory(fenced_env(env, 1))
    open_lease(factory).try_acquire()
    recorder = factory.application_recorder()
    assert isinstance(recorder, CostartApplicationRecorder) and recorder.epoch == 1
    recorder.insert_events([StoredEvent(UUID(int=1), 1, "t", b"x")])
    schema = env["POSTGRES_SCHEMA"]
    results: list[object] = []
    with psycopg.connect(base_url(url)) as takeover:
        takeover.execute(
            sql.SQL("UPDATE {}.costart_lease SET epoch = epoch + 1").format(sql.Identifier(schema))
        )  # uncommitted: holds the row lock

        def append() -> None:
            try:
                results.append(recorder.insert_events([StoredEvent(UUID(int=2), 1, "t", b"y")]))
            except FencedError as error:
                results.append(error)

        writer = threading.Thread(target=append)
        writer.start()
        time.sleep(0.3)
        assert results == []  # blocked on the lease row
        takeover.commit()
        writer.join(timeout=10)
    assert len(results) == 1 and isinstance(results[0], FencedError)
    assert recorder.max_notification_id() == 1


def test_an_unfenced_recorder_and_a_standby_read_the_log_the_leader_wrote(url):
    env = env_for_url(url)
    leader, _ = _leader(env, duration_ms=200)
    leader.submit(a_group("g1").with_member("a").build())
    factory = open_factory(env)
    standby = Standby(factory, open_lease(factory, duration_ms=200), poll_s=0.02)
    assert standby.world.position == leader.world.position
    leader.submit(a_group("g2").with_member("a").build())
    epoch = standby.wait_for_lease()  # nobody renews: it expires and is taken
    assert epoch == 2
    assert standby.world.position == leader.world.position
    promoted = Controller(env=fenced_env(env, epoch))
    promoted.submit(a_group("g3").with_member("a").build())
    assert [g.name for g in promoted.groups()] == ["g1", "g2", "g3"]
