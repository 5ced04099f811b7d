"""A store rolled back as a whole -- log, snapshots, views, lease and term together, as
a restored backup or volume snapshot brings it back -- is refused by every opener that
saw it newer (ADR 0048): the host that gives back its last known position or term, a
standby that read further, and the Controller whose views were built further. On LMDB
the store is a real directory copied at position N and copied back after more writes; on
PostgreSQL the rows and term past the backup are removed, as a restore would."""

from __future__ import annotations

import gc
import shutil
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import structlog

from costart.bootstrap import Settings, bootstrap, build_standby
from costart.cli.exits import EXIT_TAIL_LOST, exit_code
from costart.controller import Controller
from costart.domain.spec import parse_spec
from costart.eventlog.errors import LogTailLostError, StoreRolledBackError
from costart.eventlog.rollback import LastKnown
from costart.eventlog.snapshots import encode_world
from costart.server.leadership import Leadership
from tests.builders import USER
from tests.contract.conftest import Store
from tests.damage.base_store import build_views
from tests.damage.demo_store import sql

GROUP = """
name = "{name}"
owner = "bob"
[[members]]
name = "worker"
kind = "job"
shape = {{ cpu = 1 }}
"""
DEADLINE_S = 30.0


def _open(store: Store, **kwargs: Any) -> Controller:
    return bootstrap(Settings(cluster=None), env=store.env, **kwargs)


def _closed(controller: Controller) -> None:
    """Close it, and let its LMDB environment go (the files are copied next)."""
    controller.close()
    del controller
    gc.collect()


def _write(store: Store, name: str, **kwargs: Any) -> LastKnown:
    """Submit and cancel a group; what the host then knows of the log."""
    controller = _open(store, **kwargs)
    try:
        controller.submit(parse_spec(GROUP.format(name=name), "toml"))
        controller.cancel(name, actor=USER)
        return controller.last_known()
    finally:
        _closed(controller)


class Backup:
    """The whole store as it is now, to be restored over it later."""

    def __init__(self, store: Store, tmp: Path) -> None:
        self.store = store
        controller = _open(store)
        self.position = controller.world.position
        self.term = controller.recorder.stored_term()  # type: ignore[attr-defined]
        _closed(controller)
        self.copy = tmp / "backup"
        if store.name == "lmdb":
            gc.collect()  # no environment of the store left open in this process
            shutil.copytree(store.location, self.copy)

    def restore(self) -> None:
        if self.store.name == "lmdb":
            gc.collect()
            shutil.rmtree(self.store.location)
            shutil.copytree(self.copy, self.store.location)
            return
        sql(self.store, f"DELETE FROM costart_events WHERE notification_id > {self.position}")
        sql(self.store, f"DELETE FROM costart_snapshots WHERE originator_version > {self.position}")
        if self.term:
            sql(self.store, f"UPDATE costart_host_term SET term = {self.term}")
        else:
            sql(self.store, "DELETE FROM costart_host_term")


def _claim(store: Store, term: int) -> LastKnown:
    """Open under the host's ``term`` (claiming it, writing no event); what the host
    then knows of the log."""
    controller = _open(store, term=term)
    try:
        return controller.last_known()
    finally:
        _closed(controller)


def _position(store: Store) -> int:
    controller = _open(store)
    try:
        return controller.world.position
    finally:
        _closed(controller)


def test_the_host_refuses_a_store_restored_behind_its_last_known_position(store, tmp_path):
    _write(store, "before")
    backup = Backup(store, tmp_path)
    known = _write(store, "after")
    backup.restore()
    with pytest.raises(StoreRolledBackError) as error:
        _open(store, last_known=known)
    message = str(error.value)
    assert message.startswith(
        f"log ends at {backup.position}, the host last saw the log at {known.position} (hash "
    ), message
    assert "the store was rolled back" in message
    assert exit_code(error.value) == EXIT_TAIL_LOST
    assert _position(store) == backup.position  # nothing was written


def test_the_host_opens_its_store_at_or_past_its_last_known_position(store):
    known = _write(store, "first")
    assert known.position > 0
    controller = _open(store, last_known=known)
    try:
        state = encode_world(controller.world)
    finally:
        _closed(controller)
    _write(store, "second")  # another writer went on: the log is past what the host saw
    reopened = _open(store, last_known=known)
    try:
        assert reopened.world.position > known.position
        assert encode_world(reopened.world) != state
    finally:
        _closed(reopened)


def test_the_host_refuses_another_history_that_reached_its_position(store, tmp_path):
    """Restored, then written on: the log reaches the position again, with other records
    (LMDB's chain hash tells, and PostgreSQL's placed row checksum, ADR 0048)."""
    _write(store, "before")
    backup = Backup(store, tmp_path)
    known = _write(store, "after")
    backup.restore()
    while _position(store) < known.position:
        _write(store, f"other-{_position(store)}")
    with pytest.raises(StoreRolledBackError) as error:
        _open(store, last_known=known)
    assert f"the log's record at {known.position} has hash" in str(error.value)
    assert "the log was replaced or rewritten since" in str(error.value)


def test_the_host_refuses_a_store_whose_term_was_rolled_back(store, tmp_path):
    _write(store, "under-term-3", term=3)
    backup = Backup(store, tmp_path)
    known = _claim(store, 4)
    assert (known.position, known.term) == (backup.position, 4)
    backup.restore()  # the log is the same; the stored term is 3 again
    with pytest.raises(StoreRolledBackError) as error:
        _open(store, term=5, last_known=known)
    assert str(error.value).startswith(
        "the store's host term is 3, the host last saw term 4 written to it"
    )
    reopened = _open(store)
    try:
        assert reopened.recorder.stored_term() == 3  # type: ignore[attr-defined]
    finally:
        _closed(reopened)


@pytest.mark.parametrize("store", ["lmdb"], indirect=True)
def test_an_embedded_controller_refuses_a_log_behind_its_views(store, tmp_path):
    """Only the log restored: the views beside it were built further."""
    settings = Settings(store=store.location, cluster=None)
    _write(store, "before")
    backup = Backup(store, tmp_path)
    known = _write(store, "after")
    build_views(Path(store.location))
    gc.collect()
    shutil.copy(backup.copy / "data.mdb", Path(store.location) / "data.mdb")
    with pytest.raises(LogTailLostError) as error:
        bootstrap(settings)
    assert str(error.value).startswith(
        f"log ends at {backup.position}, the views were built to {known.position}"
    )
    opened = bootstrap(settings, check_views=False)  # a caller that rebuilds them
    try:
        assert opened.world.position == backup.position
    finally:
        _closed(opened)


@pytest.mark.parametrize("store", ["lmdb"], indirect=True)
def test_views_that_cannot_be_read_are_not_evidence_and_say_so(store):
    settings = Settings(store=store.location, cluster=None)
    known = _write(store, "first")
    build_views(Path(store.location))
    (Path(store.location) / "views" / "data.mdb").write_bytes(b"")
    with structlog.testing.capture_logs() as logs:
        controller = bootstrap(settings)
    try:
        assert controller.world.position == known.position
    finally:
        _closed(controller)
    warned = [e for e in logs if e["event"] == "views not checked against the log"]
    assert warned and warned[0]["log_level"] == "warning", logs
    assert "views" in warned[0]["problem"]


def _standby(store: Store, **kwargs: Any) -> tuple[Any, Any]:
    """A standby of the store (and its factory, to close), as `costart serve --standby`
    builds one."""
    leadership = Leadership(dict(store.env))
    settings = Settings(store=store.location, cluster=None)
    standby = build_standby(
        settings, leadership.factory, leadership.lease, check_views=False, poll_s=0.01, **kwargs
    )
    return standby, leadership.factory


def test_a_new_standby_given_the_last_known_position_refuses_an_older_store(store, tmp_path):
    _write(store, "before")
    backup = Backup(store, tmp_path)
    known = _write(store, "after")
    backup.restore()
    with pytest.raises(StoreRolledBackError) as error:
        _standby(store, last_known=known)
    assert f"the host last saw the log at {known.position}" in str(error.value)


@pytest.mark.parametrize("store", ["postgresql"], indirect=True)
@pytest.mark.parametrize("start", ["from the log", "from a snapshot at its end"])
def test_a_running_standby_refuses_a_log_restored_behind_what_it_read(store, tmp_path, start):
    _write(store, "before")
    backup = Backup(store, tmp_path)
    known = _write(store, "after")
    if start != "from the log":
        controller = _open(store)
        assert controller.snapshot_now() == known.position  # nothing left to fold
        _closed(controller)
    standby, factory = _standby(store)
    try:
        assert standby.seen.position == known.position
        backup.restore()  # the database restored from a backup while the standby runs
        with pytest.raises(StoreRolledBackError) as error:
            standby.tail()
        assert str(error.value).startswith(
            f"log ends at {backup.position}, the standby had read the log to {known.position}"
        )
        assert standby.world.position == known.position  # it folded nothing older
    finally:
        factory.close()


def _until(condition: Callable[[], bool], what: str) -> None:
    deadline = threading.Event()
    timer = threading.Timer(DEADLINE_S, deadline.set)
    timer.start()
    try:
        while not condition():
            if deadline.wait(0.01):
                raise AssertionError(f"not within {DEADLINE_S}s: {what}")
    finally:
        timer.cancel()


@pytest.mark.parametrize("store", ["postgresql"], indirect=True)
def test_a_running_standby_refuses_a_lease_epoch_that_went_back(store):
    _write(store, "before")
    leader = Leadership(dict(store.env), lease_ns=600 * 10**9)
    assert leader.lease.try_acquire() == 1
    leader.lease.release()
    assert leader.lease.try_acquire() == 2  # held (ten minutes): the standby waits
    standby, factory = _standby(store)
    stop = threading.Event()
    raised: list[BaseException] = []

    def wait() -> None:
        try:
            standby.wait_for_lease(stop)
        except BaseException as error:  # the test asserts what it was
            raised.append(error)

    waiter = threading.Thread(target=wait, daemon=True)
    waiter.start()
    try:
        # The standby keeps the newest epoch it read private: only this test watches it.
        _until(lambda: standby._epoch_seen == 2, "the standby read epoch 2")
        sql(store, "UPDATE costart_lease SET epoch = 1")  # the lease table restored
        waiter.join(DEADLINE_S)
        assert not waiter.is_alive(), "the standby went on waiting"
    finally:
        stop.set()
        waiter.join(DEADLINE_S)
        factory.close()
        leader.factory.close()
    assert len(raised) == 1 and isinstance(raised[0], StoreRolledBackError), raised
    assert str(raised[0]).startswith("the lease's epoch is 1, the standby saw epoch 2")
