"""Real processes: concurrent writers, cross-process tailing, stale readers, SIGKILL."""

from __future__ import annotations

import os
import random
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from costart.store import LmdbApplicationRecorder, StoreSettings, iter_log, open_store, verify_log
from tests import child_processes

from .support import SLOW, TempStores, batch

HELPER = str(Path(__file__).with_name("proc_helper.py"))
LOG = "stored_events"


def spawn(*args: object) -> subprocess.Popen[bytes]:
    return child_processes.popen(
        [sys.executable, HELPER, *map(str, args)],
        stdout=subprocess.PIPE,
        stderr=None,  # inherit: shown by pytest on failure
    )


class Forked:
    """A writer the zygote forked: its pid and the read end of its stdout."""

    def __init__(self, zygote: Zygote, pid: int, stdout: int) -> None:
        self.zygote = zygote
        self.pid = pid
        self.stdout = os.fdopen(stdout, "rb")

    def kill_and_collect(self) -> tuple[bytes, int]:
        """SIGKILL it; everything it wrote after ``ready``, and its exit code."""
        os.kill(self.pid, signal.SIGKILL)
        with self.stdout:
            output = self.stdout.read()  # to the end: the last holder of the write end died
        return output, self.zygote.reap(self.pid)


class Zygote:
    """`proc_helper.py zygote`: one process that has imported the store and forks a
    writer per request, so a run of kills is not a run of interpreter start-ups. Each
    writer is still its own process with its own LMDB environment, killed by SIGKILL."""

    def __init__(self) -> None:
        self.requests, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        with theirs:
            self.process = child_processes.popen(
                [sys.executable, HELPER, "zygote", str(theirs.fileno())],
                pass_fds=[theirs.fileno()],
                stderr=None,  # inherit: shown by pytest on failure
            )

    def writer(self, *args: object) -> Forked:
        """A forked ``writer`` (`proc_helper.py`'s arguments), once it said ``ready``."""
        read_end, write_end = os.pipe()
        try:
            request = " ".join(["writer", *map(str, args)]).encode()
            socket.send_fds(self.requests, [request], [write_end])
        finally:
            os.close(write_end)  # the child holds the only write end now
        forked = Forked(self, int(self._answer("pid")[0]), read_end)
        line = forked.stdout.readline()
        assert line == b"ready\n", line
        return forked

    def reap(self, pid: int) -> int:
        self.requests.sendall(f"wait {pid}".encode())
        answered_pid, code = self._answer("exit")
        assert int(answered_pid) == pid
        return int(code)

    def _answer(self, kind: str) -> list[str]:
        got, *fields = self.requests.recv(4096).decode().split()
        assert got == kind, (got, fields)
        return fields

    def close(self) -> None:
        self.requests.close()  # the zygote's end of requests: it exits
        assert self.process.wait(timeout=30) == 0


@contextmanager
def zygote() -> Iterator[Zygote]:
    forks = Zygote()
    try:
        yield forks
    finally:
        forks.close()


def wait_ready(proc: subprocess.Popen[bytes]) -> None:
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line == b"ready\n", line


def acks(output: bytes) -> dict[str, tuple[int, int]]:
    """``tag -> (first id, last id)`` of every complete acknowledgement line."""
    found = {}
    for line in output.split(b"\n")[:-1]:  # the last piece has no newline
        if line.startswith(b"ack "):
            _, tag, first, last = line.decode().split()
            found[tag] = (int(first), int(last))
    return found


def check_log(path: str, acked: dict[str, tuple[int, int]], *, full: bool) -> int:
    """Open the log as a fresh process would and check what a crash may not break.

    Every acknowledged batch is present at its acknowledged ids; every batch
    present is complete (all or nothing) and contiguous; ids are gap-free and
    the chain verifies (``iter_log`` raises otherwise). Returns the record count.
    """
    store = open_store(StoreSettings(path=path))
    try:
        batches: dict[str, list[tuple[int, int, int]]] = {}
        count = 0
        for record in iter_log(store, LOG):
            tag, version, size = record.state.decode().split("/")
            batches.setdefault(tag, []).append((record.id, int(version), int(size)))
            count += 1
        for tag, items in batches.items():
            size = items[0][2]
            assert [v for _, v, _ in items] == list(range(1, size + 1)), f"partial batch {tag}"
            first = items[0][0]
            assert [i for i, _, _ in items] == list(range(first, first + size)), tag
        for tag, (first, last) in acked.items():
            assert tag in batches, f"acknowledged batch {tag} lost"
            assert (batches[tag][0][0], batches[tag][-1][0]) == (first, last), tag
        if full:
            report = verify_log(store)
            assert report.ok, report.problems
        return count
    finally:
        store.release()


def run_crashes(stores: TempStores, kills: int) -> None:
    seed = int(os.environ.get("COSTART_CRASH_SEED", random.randrange(1 << 32)))
    print(f"crash test seed: {seed} (rerun with COSTART_CRASH_SEED={seed})")
    rng = random.Random(seed)
    path = stores.path()  # one environment reused across all kills
    acked: dict[str, tuple[int, int]] = {}
    killed_mid_run = 0
    with zygote() as forks:
        for cycle in range(kills):
            try:
                killed_mid_run += crash_once(forks, rng, path, cycle, acked)
                check_log(path, acked, full=cycle % 10 == 9 or cycle == kills - 1)
            except Exception as e:
                raise AssertionError(f"seed {seed}, after kill #{cycle + 1}: {e}") from e
    # Most kills must land while batches are being written, or we test nothing.
    assert killed_mid_run >= kills // 2, f"seed {seed}: only {killed_mid_run} kills mid-run"
    assert len(acked) > kills


def crash_once(
    forks: Zygote, rng: random.Random, path: str, cycle: int, acked: dict[str, tuple[int, int]]
) -> bool:
    """Start a writer, SIGKILL it at a random moment and add what it acknowledged to
    ``acked``; whether it had acknowledged anything."""
    size = rng.randint(1, 6)
    writer = forks.writer(path, f"c{cycle}", 3, 0, size, 128 * 1024)
    time.sleep(rng.uniform(0.0, 0.06))
    output, returncode = writer.kill_and_collect()
    assert returncode == -signal.SIGKILL, "the writer exited by itself"
    new = acks(output)
    acked.update(new)
    return bool(new)


@pytest.mark.timeout(150)
def test_sigkill_during_appends_loses_no_acknowledged_batch(stores: TempStores) -> None:
    run_crashes(stores, kills=50)


@pytest.mark.slow
@pytest.mark.timeout(3600)
def test_sigkill_during_appends_many_times(stores: TempStores) -> None:
    kills = os.environ.get("COSTART_CRASH_KILLS")
    run_crashes(stores, kills=int(kills) if kills else 500 if SLOW else 200)


@pytest.mark.timeout(120)
def test_writer_processes_never_interleave_ids(stores: TempStores) -> None:
    path = stores.path()
    recorder = LmdbApplicationRecorder(stores.open(path))  # this process writes too
    procs = [spawn("writer", path, f"p{n}", 2, 30, 10, 64 * 1024) for n in range(3)]
    for i in range(20):
        recorder.insert_events(batch(f"parent-{i}", 10))
    outputs = [p.communicate()[0] for p in procs]
    assert all(p.returncode == 0 for p in procs)
    acked = {}
    for output in outputs:
        acked.update(acks(output))
    assert len(acked) == 3 * 2 * 30
    recorder.close()
    assert check_log(path, acked, full=True) == 3 * 2 * 30 * 10 + 20 * 10


@pytest.mark.timeout(60)
def test_subscription_tails_another_process(stores: TempStores) -> None:
    path = stores.path()
    store = open_store(StoreSettings(path=path, poll_interval=0.02))
    recorder = LmdbApplicationRecorder(store)
    store.release()  # the recorder holds its own reference
    recorder.insert_events(batch("before", 2))
    with recorder.subscribe(gt=1) as subscription:
        proc = spawn("writer", path, "tail", 1, 4, 3, 1 << 20)
        received = []
        for notification in subscription:
            received.append(notification)
            if len(received) == 1 + 4 * 3:
                break
    proc.communicate()
    assert [n.id for n in received] == list(range(2, 15))
    assert {n.state.decode().split("/")[0] for n in received[1:]} == {
        f"tail-0-{i}" for i in range(4)
    }
    recorder.close()


@pytest.mark.timeout(60)
def test_stale_reader_slots_of_killed_process_are_cleared_on_open(stores: TempStores) -> None:
    path = stores.path()
    victim = spawn("hold-reader", path)
    wait_ready(victim)
    survivor = spawn("hold-reader", path)  # keeps the lock file's reader table alive
    wait_ready(survivor)
    try:
        victim.send_signal(signal.SIGKILL)
        victim.wait()
        store = stores.open(path)
        pids = {int(m) for m in re.findall(r"^\s*(\d+)\s", store.env.readers(), re.M)}
        assert victim.pid not in pids
        assert survivor.pid in pids
    finally:
        survivor.kill()
        survivor.wait()


@pytest.mark.timeout(60)
def test_map_grown_by_another_process_is_adopted(stores: TempStores) -> None:
    path = stores.path()
    store = stores.open(path, map_size=64 * 1024)
    recorder = LmdbApplicationRecorder(store)
    recorder.insert_events(batch("first", 3))
    initial = store.env.info()["map_size"]
    proc = spawn("writer", path, "grower", 1, 200, 10, 64 * 1024)
    assert proc.wait() == 0
    # Our map is smaller than the data now: reads adopt the new size, writes grow.
    assert recorder.max_notification_id() == 3 + 2000
    assert sum(1 for _ in recorder.iter_notifications()) == 2003
    assert recorder.insert_events(batch("after", 2)) == [2004, 2005]
    assert store.env.info()["map_size"] > initial
    assert verify_log(recorder).ok
    recorder.close()
