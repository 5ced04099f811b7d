"""`LogFollower`: readers wait (bounded) until the follower reached their position; one
run covers many pokes; a failing catch-up fails the readers waiting on it, never
answers them from a position short of theirs."""

from __future__ import annotations

import threading
import time

import pytest

from costart.service.log_follower import LogFollower, ViewsBehindError

CALLERS = 16


class FakeLog:
    """A log that writers append to, and views that a catch-up copies (slowly)."""

    def __init__(self) -> None:
        self.log: list[int] = []
        self.views: list[int] = []
        self.lock = threading.Lock()
        self.fail: Exception | None = None

    def append(self, item: int) -> int:
        with self.lock:
            self.log.append(item)
            return len(self.log)

    def catch_up(self) -> int:
        if self.fail is not None:
            raise self.fail
        with self.lock:
            seen = list(self.log)
        time.sleep(0.005)
        self.views = seen
        return len(seen)


def test_every_reader_sees_its_write_and_runs_are_shared():
    fake = FakeLog()
    follower = LogFollower(fake.catch_up, 0, pause_s=0.01)
    missing: list[int] = []

    def caller(i: int) -> None:
        for round_ in range(5):
            item = i * 100 + round_
            position = fake.append(item)
            follower.poke()
            follower.wait_for(position)
            if item not in fake.views:
                missing.append(item)

    threads = [threading.Thread(target=caller, args=(i,)) for i in range(CALLERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    follower.stop()
    assert missing == []
    assert follower.runs < CALLERS * 5 / 2  # readers waiting together shared a run


def test_pokes_within_the_pause_share_one_run():
    fake = FakeLog()
    follower = LogFollower(fake.catch_up, 0, pause_s=0.2)
    for i in range(20):
        fake.append(i)
        follower.poke()
    deadline = time.monotonic() + 5
    while follower.position < 20 and time.monotonic() < deadline:
        time.sleep(0.01)
    follower.stop()
    assert follower.position == 20
    assert follower.runs <= 2


def test_a_failed_catch_up_fails_its_waiting_readers_and_the_next_one_recovers():
    fake = FakeLog()
    follower = LogFollower(fake.catch_up, 0, pause_s=0.01)
    fake.fail = OSError("disk full")
    position = fake.append(1)
    with pytest.raises(OSError, match="disk full"):
        follower.wait_for(position)
    fake.fail = None
    follower.wait_for(position)  # a later reader makes it run again, and it succeeds
    follower.stop()
    assert fake.views == [1]


def test_a_reader_never_waits_past_its_bound_nor_returns_short_of_its_position():
    fake = FakeLog()
    follower = LogFollower(fake.catch_up, 0, pause_s=0.01, wait_s=0.3)
    started = time.monotonic()
    with pytest.raises(ViewsBehindError, match=r"did not reach log position 5 within 0\.3s"):
        follower.wait_for(5)  # the log never gets there
    follower.stop()
    assert time.monotonic() - started < 5


def test_a_stopped_source_fails_the_reader_at_once():
    fake = FakeLog()

    def check() -> None:
        raise RuntimeError("the controller stopped")

    follower = LogFollower(fake.catch_up, 0, check=check, pause_s=0.01)
    with pytest.raises(RuntimeError, match="the controller stopped"):
        follower.wait_for(3)
    follower.stop()
