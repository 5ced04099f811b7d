"""Group commit, per-caller atomicity, map growth and durability modes."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from eventsourcing.persistence import IntegrityError, StoredEvent, Tracking

from costart.store import LmdbApplicationRecorder, LmdbProcessRecorder, LmdbStore, verify_log

from .support import TempStores, batch, batch_originator

GATE_TIMEOUT_S = 30.0


def gated_writes(store: LmdbStore, callers: int) -> None:
    """Hold the first write transaction until the other ``callers - 1`` callers have
    queued behind it (a bounded wait on that condition, not a sleep that thread starts
    may outrun), so they all share the next one."""
    begin = store.begin
    queue = store.committer._queue
    held = threading.Event()

    def gated_begin(*, write: bool = False) -> Any:
        if write and not held.is_set():
            held.set()
            deadline = time.monotonic() + GATE_TIMEOUT_S
            while len(queue) < callers - 1:
                assert time.monotonic() < deadline, f"{len(queue) + 1}/{callers} callers queued"
                time.sleep(0.001)
        return begin(write=write)

    store.begin = gated_begin  # type: ignore[method-assign]


def race(calls: list[Callable[[], Any]]) -> list[Any]:
    """Run calls in threads released together; return results or exceptions."""
    results: list[Any] = [None] * len(calls)
    barrier = threading.Barrier(len(calls))

    def run(i: int) -> None:
        barrier.wait()
        try:
            results[i] = calls[i]()
        except Exception as e:
            results[i] = e

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(calls))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


def txn_count(store: LmdbStore) -> int:
    return int(store.env.info()["last_txnid"])


def test_concurrent_callers_share_write_transactions(stores: TempStores) -> None:
    store = stores.open()
    recorder = LmdbApplicationRecorder(store)
    recorder.insert_events(batch("warm-up", 1))
    gated_writes(store, 20)
    before = txn_count(store)

    results = race([lambda i=i: recorder.insert_events(batch(f"g{i}", 5)) for i in range(20)])

    # 20 callers: the first commits alone, the 19 queued behind it share the next.
    assert txn_count(store) - before == 2
    ids = sorted(i for r in results for i in r)
    assert ids == list(range(2, 102))
    for r in results:
        assert r == list(range(r[0], r[0] + 5))  # each caller's batch contiguous
    assert verify_log(recorder).ok
    recorder.close()


def test_conflict_fails_only_its_own_caller(stores: TempStores) -> None:
    store = stores.open()
    recorder = LmdbApplicationRecorder(store)
    recorder.insert_events(batch("existing", 2))
    gated_writes(store, 12)
    twice = batch("twice", 1)
    calls: list[Callable[[], Any]] = [
        lambda i=i: recorder.insert_events(batch(f"ok{i}", 3)) for i in range(8)
    ]
    calls += [
        lambda: recorder.insert_events(batch("existing", 1, first_version=2)),  # exists
        lambda: recorder.insert_events(batch("fresh", 2) + twice + twice),  # repeated
        lambda: recorder.insert_events(batch("race", 2)),
        lambda: recorder.insert_events(batch("race", 2)),
    ]
    before = txn_count(store)
    results = race(calls)

    assert txn_count(store) - before <= 3
    assert all(isinstance(r, list) and len(r) == 3 for r in results[:8])
    assert isinstance(results[8], IntegrityError)
    assert isinstance(results[9], IntegrityError)
    assert sorted(isinstance(r, IntegrityError) for r in results[10:]) == [False, True]
    # Failed batches left nothing behind, not even a partial index entry.
    assert recorder.select_events(batch_originator("fresh")) == []
    assert recorder.select_events(batch_originator("twice")) == []
    assert len(recorder.select_events(batch_originator("race"))) == 2
    assert recorder.max_notification_id() == 2 + 8 * 3 + 2
    report = verify_log(recorder)
    assert report.ok, report.problems
    recorder.close()


def test_tracking_conflict_fails_only_its_own_caller(stores: TempStores) -> None:
    store = stores.open()
    recorder = LmdbProcessRecorder(store)
    gated_writes(store, 6)
    results = race(
        [
            lambda i=i: recorder.insert_events(
                batch(f"p{i}", 2),
                tracking=Tracking("upstream", 10) if i < 2 else Tracking(f"other{i}", 1),
            )
            for i in range(6)
        ]
    )
    assert sorted(isinstance(r, IntegrityError) for r in results[:2]) == [False, True]
    assert all(isinstance(r, list) for r in results[2:])
    assert recorder.max_tracking_id("upstream") == 10
    assert recorder.max_tracking_id("other5") == 1
    assert recorder.max_notification_id() == 5 * 2
    assert verify_log(recorder).ok
    recorder.close()


def test_map_grows_when_full_and_nothing_is_lost(stores: TempStores) -> None:
    store = stores.open(map_size=64 * 1024)
    recorder = LmdbApplicationRecorder(store)
    initial = store.env.info()["map_size"]
    stop = threading.Event()
    errors: list[BaseException] = []

    def keep_reading() -> None:  # readers must not block or break a resize
        while not stop.is_set():
            try:
                recorder.select_notifications(None, 50)
                recorder.max_notification_id()
                # Busy-looping readers would starve the writer of the GIL
                # (py-lmdb releases it around every call): not what we test.
                time.sleep(0.001)
            except BaseException as e:
                errors.append(e)
                return

    readers = [threading.Thread(target=keep_reading) for _ in range(2)]
    for t in readers:
        t.start()
    try:
        payload = b"x" * 400
        for i in range(200):
            events = [
                StoredEvent(batch_originator(f"m{i}"), v, "t", payload + b"%d" % v)
                for v in range(1, 6)
            ]
            assert recorder.insert_events(events) == list(range(5 * i + 1, 5 * i + 6))
        # One batch much larger than the (already grown) map.
        size = store.env.info()["map_size"]
        big = [StoredEvent("big", v, "t", b"y" * 1000) for v in range(1, 4 * size // 1000)]
        ids = recorder.insert_events(big)
        assert ids is not None and len(ids) == len(big)
    finally:
        stop.set()
        for t in readers:
            t.join()
    assert not errors
    assert store.env.info()["map_size"] >= 8 * initial
    assert len(recorder.select_events("big")) == len(big)
    report = verify_log(recorder)
    assert report.ok and report.logs[0].records == 1000 + len(big)
    recorder.close()


def test_sync_mode_flushes_on_commit(stores: TempStores) -> None:
    store = stores.open()
    flags = store.env.flags()
    assert flags["sync"] and flags["metasync"]


def test_async_mode_defers_flush_and_syncs_on_close(stores: TempStores) -> None:
    path = stores.path()
    store = stores.open(path, durability="async")
    assert not store.env.flags()["sync"]
    recorder = LmdbApplicationRecorder(store)
    for i in range(10):
        recorder.insert_events(batch(f"a{i}", 2))
    recorder.close()
    store.release()  # last holder: env.sync(True), then close
    assert store.closed
    reopened = LmdbApplicationRecorder(stores.open(path))
    assert reopened.max_notification_id() == 20
    assert verify_log(reopened).ok
    reopened.close()


def test_one_environment_per_path_in_a_process(stores: TempStores) -> None:
    path = stores.path()
    a = stores.open(path)
    b = stores.open(path + "/")  # same directory, other spelling
    assert a is b
    r1 = LmdbApplicationRecorder(a, log_name="app1_events")
    r2 = LmdbApplicationRecorder(b, log_name="app2_events")
    assert r1.insert_events(batch("one", 2)) == [1, 2]
    assert r2.insert_events(batch("two", 3)) == [1, 2, 3]  # each log has its own ids
    r1.close()
    r2.close()


@pytest.mark.parametrize("limit", [1, 3, 100])
def test_select_events_ranges(stores: TempStores, limit: int) -> None:
    recorder = LmdbApplicationRecorder(stores.open())
    recorder.insert_events(batch("r", 10))
    recorder.insert_events(batch("r-neighbour", 10))  # adjacent keys must not leak in
    oid = batch_originator("r")

    def versions(**kw: Any) -> list[int]:
        return [e.originator_version for e in recorder.select_events(oid, limit=limit, **kw)]

    assert versions() == list(range(1, 11))[:limit]
    assert versions(desc=True) == list(range(10, 0, -1))[:limit]
    assert versions(gt=3, lte=7) == [4, 5, 6, 7][:limit]
    assert versions(gt=3, lte=7, desc=True) == [7, 6, 5, 4][:limit]
    assert versions(lte=0) == []
    assert versions(gt=10) == []
    recorder.close()
