"""The Controller's pipelined appends on LMDB: concurrent commands share fsyncs, every
acknowledged event is in the log, and a failed or interleaved write stops the
controller instead of letting its state run ahead of the log."""

from __future__ import annotations

import threading
import time

import pytest

import costart.store.committer as committer
from costart.controller import Controller
from costart.domain import lifecycle
from costart.domain.world import World
from costart.eventlog.capabilities import Capability, declaring
from costart.eventlog.codec import MsgspecMapper
from costart.eventlog.memory import MemoryApplicationRecorder
from costart.eventlog.snapshots import encode_world
from costart.log_writer import ControllerStoppedError, LogWriter
from costart.replay.rebuild import rebuild
from costart.replay.source import RecorderSource
from tests.builders import USER, ManualClock, a_group


def lmdb_env(path):
    return {"PERSISTENCE_MODULE": "costart.store", "COSTART_LMDB_PATH": str(path)}


def test_concurrent_commands_share_commits_and_all_are_acknowledged(tmp_path, monkeypatch):
    commits: list[int] = []
    original = committer.GroupCommitter._commit

    def counting(self, group):
        commits.append(len(group))
        return original(self, group)

    monkeypatch.setattr(committer.GroupCommitter, "_commit", counting)
    controller = Controller(env=lmdb_env(tmp_path), clock=ManualClock())
    specs = [[a_group(f"t{t}-g{i}").with_member("a").build() for i in range(25)] for t in range(8)]
    acknowledged: list[str] = []

    def submitter(t: int) -> None:
        for spec in specs[t]:
            controller.submit(spec)
            acknowledged.append(spec.name)

    threads = [threading.Thread(target=submitter, args=(t,)) for t in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(acknowledged) == 200
    assert sum(commits) == 200 and len(commits) < 200  # some commands shared a commit
    logged = rebuild(RecorderSource(controller.recorder))
    assert sorted(acknowledged) == sorted(logged.live_names)
    assert encode_world(logged) == encode_world(controller.world)


def test_a_write_that_interleaves_with_another_writer_stops_the_controller(tmp_path):
    first = Controller(env=lmdb_env(tmp_path), clock=ManualClock())
    first.submit(a_group("one").with_member("a").build())
    second = Controller(env=lmdb_env(tmp_path), clock=ManualClock())
    second.submit(a_group("two").with_member("a").build())  # appended behind first's back
    with pytest.raises(ControllerStoppedError):
        first.submit(a_group("three").with_member("a").build())
    with pytest.raises(ControllerStoppedError):
        first.cancel("one", actor=USER)
    with pytest.raises(ControllerStoppedError):
        first.may_start("one/a")
    restarted = Controller(env=lmdb_env(tmp_path), clock=ManualClock())
    assert sorted(restarted.world.live_names) == ["one", "three", "two"]
    assert encode_world(restarted.world) == encode_world(
        rebuild(RecorderSource(restarted.recorder))
    )


def test_a_failed_write_fails_every_later_write_of_the_same_controller(tmp_path, monkeypatch):
    controller = Controller(env=lmdb_env(tmp_path), clock=ManualClock())
    controller.submit(a_group("one").with_member("a").build())
    original = committer._apply
    calls = {"n": 0}

    def failing_once(txn, request, heads, verified):
        calls["n"] += 1
        if calls["n"] == 1:
            raise committer.IntegrityError("injected")
        return original(txn, request, heads, verified)

    monkeypatch.setattr(committer, "_apply", failing_once)
    with pytest.raises(ControllerStoppedError, match="injected"):
        controller.submit(a_group("two").with_member("a").build())
    with pytest.raises(ControllerStoppedError):
        controller.submit(a_group("three").with_member("a").build())
    monkeypatch.setattr(committer, "_apply", original)
    assert rebuild(RecorderSource(controller.recorder)).live_names.keys() == {"one"}


def test_a_thread_awaiting_a_queued_position_wakes_when_it_is_acknowledged():
    # Acknowledgements notify only while a thread waits: that thread must still wake.
    writer: LogWriter

    class AfterTheWaiter(MemoryApplicationRecorder):
        """Queues writes; a queued write lands once a thread waits for it."""

        capabilities = MemoryApplicationRecorder.capabilities | Capability.DEFERRED_INSERTS

        def insert_events_deferred(self, stored_events, chain):
            recorder = self

            class Write:
                def wait(self):
                    while not writer._waiting:
                        time.sleep(0.001)
                    return recorder.insert_events(stored_events)

            return Write()

    queueing = AfterTheWaiter()
    assert declaring(queueing, Capability.DEFERRED_INSERTS) is not None  # the writer queues
    writer = LogWriter(queueing, MsgspecMapper())
    thread = threading.Thread(target=writer.await_durable, args=(1,), daemon=True)
    thread.start()
    unit = lifecycle.submit(World(), a_group("g").with_member("a").build(), 1)
    writer.append(unit.pending_events, 1)
    writer.settle()
    thread.join(timeout=60)
    assert not thread.is_alive()


def test_a_batch_of_commands_is_acknowledged_once_at_its_end_and_all_are_durable(
    tmp_path, monkeypatch
):
    settles: list[int] = []
    original = LogWriter.settle

    def counting(self):
        settles.append(len(getattr(self._local, "pending", None) or []))
        return original(self)

    monkeypatch.setattr(LogWriter, "settle", counting)
    controller = Controller(env=lmdb_env(tmp_path), clock=ManualClock())
    with controller.batch():
        controller.submit(a_group("a").with_member("m").build())
        with pytest.raises(Exception, match="already"):  # a conflict inside changes nothing
            controller.submit(a_group("a").with_member("m").build())
        controller.submit(a_group("b").with_member("m").build())
        position = controller.world.position
    # One settle for both writes (the inner commands did not wait on their own).
    assert settles == [2]
    logged = rebuild(RecorderSource(controller.recorder))
    assert sorted(logged.live_names) == ["a", "b"]
    assert logged.position == position
    controller.close()
