"""`SharedRefresh`: every caller sees its own write, and concurrent callers share runs."""

from __future__ import annotations

import contextlib
import threading
import time

import pytest

from costart.rest.refresh import SharedRefresh

CALLERS = 16


class FakeViews:
    """A log that writers append to and views that a catch-up copies, slowly (the copy
    is taken at the start of a run, as a catch-up reads the log when it begins)."""

    def __init__(self) -> None:
        self.log: list[int] = []
        self.views: list[int] = []
        self.lock = threading.Lock()

    def catch_up(self) -> None:
        with self.lock:
            seen = list(self.log)
        time.sleep(0.01)
        self.views = seen


def test_every_caller_sees_its_write_and_runs_are_shared():
    fake = FakeViews()
    shared = SharedRefresh(fake.catch_up)
    missing: list[int] = []

    def caller(i: int) -> None:
        for round_ in range(5):
            item = i * 100 + round_
            with fake.lock:
                fake.log.append(item)
            shared.refresh()
            if item not in fake.views:
                missing.append(item)

    threads = [threading.Thread(target=caller, args=(i,)) for i in range(CALLERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert missing == []
    assert shared.runs < CALLERS * 5 / 2  # callers waiting together shared a run


def test_a_failed_run_raises_for_its_runner_and_the_next_caller_runs_again():
    calls = []

    def catch_up() -> None:
        calls.append(1)
        if len(calls) == 1:
            raise OSError("disk full")

    shared = SharedRefresh(catch_up)
    with pytest.raises(OSError, match="disk full"):
        shared.refresh()
    shared.refresh()
    assert len(calls) == 2


def test_callers_waiting_on_a_failed_run_are_not_told_their_write_is_visible():
    first_running = threading.Event()
    release = threading.Event()
    runs: list[str] = []

    def catch_up() -> None:
        if not runs:
            runs.append("first")
            first_running.set()
            release.wait(5)
        elif len(runs) == 1:
            runs.append("failing")
            raise OSError("disk full")
        else:
            runs.append("ok")

    shared = SharedRefresh(catch_up)
    first = threading.Thread(target=shared.refresh)
    first.start()
    first_running.wait(5)
    # Both wait for the run after the first; one of them runs it, and it fails.
    waiters = [threading.Thread(target=lambda: _swallow(shared.refresh)) for _ in range(2)]
    for t in waiters:
        t.start()
    time.sleep(0.05)
    release.set()
    for t in (first, *waiters):
        t.join()
    assert runs == ["first", "failing", "ok"]


def _swallow(call) -> None:
    with contextlib.suppress(OSError):
        call()
