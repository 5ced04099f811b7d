"""Zero-filled headroom: durable commits overwrite blocks the file already has instead of
growing it, and the zeros never reach a reader."""

from __future__ import annotations

import os

import pytest
from eventsourcing.utils import Environment
from structlog.testing import capture_logs

from costart.store import StoreSettings, open_store
from costart.store.headroom import Headroom
from costart.store.integrity import verify_log
from costart.store.recorders import LmdbApplicationRecorder
from costart.store.settings import HEADROOM, PATH, settings_from_env

from .support import TempStores, batch

MIB = 1 << 20


def data_size(path: str) -> int:
    return os.path.getsize(os.path.join(path, "data.mdb"))


def used_bytes(recorder: LmdbApplicationRecorder) -> int:
    info, stat = recorder.store.env.info(), recorder.store.env.stat()
    return (info["last_pgno"] + 1) * stat["psize"]


def test_small_durable_commits_do_not_grow_the_file(stores: TempStores) -> None:
    path = stores.path()
    store = open_store(StoreSettings(path=path, map_size=1 << 26, headroom=4 * MIB))
    recorder = LmdbApplicationRecorder(store)
    try:
        recorder.insert_events(batch("first", 1))
        size = data_size(path)
        assert size - used_bytes(recorder) >= 2 * MIB  # filled after the first commit
        for i in range(200):
            recorder.insert_events(batch(f"e{i}", 3))
        # ~600 records (~100 KB) went into blocks the file already had.
        assert data_size(path) == size
        assert store.headroom.fills == 1
    finally:
        recorder.close()


def test_refills_when_half_is_used_and_never_overwrites_records(stores: TempStores) -> None:
    path = stores.path()
    store = open_store(StoreSettings(path=path, map_size=1 << 26, headroom=MIB))
    recorder = LmdbApplicationRecorder(store)
    try:
        written = []
        for i in range(300):
            events = batch(f"big{i}", 2)
            events = [
                e.__class__(e.originator_id, e.originator_version, e.topic, bytes(3000))
                for e in events
            ]
            recorder.insert_events(events)
            written.extend(events)
        assert store.headroom.fills > 1
        assert data_size(path) - used_bytes(recorder) >= MIB // 2
        notifications = recorder.select_notifications(start=1, limit=10_000)
        assert [n.state for n in notifications] == [e.state for e in written]
    finally:
        recorder.close()
    report = verify_log(path)
    assert report.ok, report


def test_headroom_off_leaves_the_file_to_lmdb(stores: TempStores) -> None:
    path = stores.path()
    store = open_store(StoreSettings(path=path, map_size=1 << 26, headroom=0))
    recorder = LmdbApplicationRecorder(store)
    try:
        recorder.insert_events(batch("a", 1))
        assert data_size(path) == used_bytes(recorder)
        assert store.headroom.fills == 0
    finally:
        recorder.close()


def test_async_stores_and_read_only_opens_do_not_fill(stores: TempStores) -> None:
    store = stores.open(durability="async")
    recorder = LmdbApplicationRecorder(store)
    recorder.insert_events(batch("a", 1))
    assert store.headroom.fills == 0
    recorder.close()


def test_never_fills_past_the_map(stores: TempStores) -> None:
    path = stores.path()
    map_size = 1 << 21
    store = open_store(StoreSettings(path=path, map_size=map_size, headroom=8 * MIB))
    recorder = LmdbApplicationRecorder(store)
    try:
        recorder.insert_events(batch("a", 1))
        assert data_size(path) == map_size
    finally:
        recorder.close()


@pytest.mark.parametrize("raw", ["-1", "lots"])
def test_a_bad_headroom_setting_names_the_key(raw: str) -> None:
    env = Environment(env={PATH: "/nonexistent", HEADROOM: raw})
    with pytest.raises(OSError, match=HEADROOM):
        settings_from_env(env)


def test_a_failed_fill_is_logged_and_turns_headroom_off(stores: TempStores) -> None:
    store = stores.open()
    headroom = Headroom(store, 4 * MIB)
    headroom._data_file = os.path.join(stores.path(), "missing", "data.mdb")
    with capture_logs() as logs:
        headroom.keep(0)  # must not raise
        headroom.keep(0)  # off now: no second attempt
    assert headroom.fills == 0
    assert [entry["event"] for entry in logs] == ["lmdb.headroom_fill_failed"]
