"""Running commands from the event loop in batches: one thread hand-off for many.

Handing each request to a worker thread of its own costs two thread wake-ups and the
thread pool's bookkeeping per request, and sixteen threads then queue for the Controller's
lock and the interpreter lock one by one (ADR 0050 measured what that costs a REST
submit). A `CommandBatcher` queues the commands of the requests in flight; each of
its few threads takes all that are queued and runs them inside one `Controller.batch` --
one hold of the lock, one shared fsync -- and hands all the answers back to the event loop
at once. While one thread waits for its batch's fsync the next takes the commands that
arrived meanwhile.

A command's own error (a conflict, a bad spec) fails only its request. A failed write
fails the whole batch: none of its commands is acknowledged, and the controller stops.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable
from typing import Any, Final, TypeVar

from costart.controller import Controller

P = TypeVar("P")
T = TypeVar("T")
THREADS: Final = 2
MAX_BATCH: Final = 64
"""Most commands in one batch (bounds how long one batch holds the Controller's lock)."""

_Job = tuple[
    Callable[[], Any], Callable[[Any], Any], asyncio.Future[Any], asyncio.AbstractEventLoop
]
_Outcome = tuple[asyncio.Future[Any], Any, BaseException | None]


class CommandBatcher:
    """Runs commands (callables that call the Controller) in batches; `run` awaits one.
    ``on_batch`` is called in the batch's thread once a batch is durable (the service
    tells its log followers). `close` stops the threads after the queued commands ran."""

    def __init__(
        self,
        controller: Controller,
        *,
        on_batch: Callable[[], None] = lambda: None,
        threads: int = THREADS,
        max_batch: int = MAX_BATCH,
    ) -> None:
        if threads < 1 or max_batch < 1:
            raise ValueError("a batcher needs at least one thread and one command a batch")
        self._controller = controller
        self._on_batch = on_batch
        self._max_batch = max_batch
        self._cond = threading.Condition()
        self._queue: list[_Job] = []
        self._closed = False
        self.batches = 0  # how many batches ran (tests: fewer than commands under load)
        self._threads = [
            threading.Thread(target=self._work, name=f"costart-commands-{i}", daemon=True)
            for i in range(threads)
        ]
        for thread in self._threads:
            thread.start()

    async def run(self, prepare: Callable[[], P], command: Callable[[P], T]) -> T:
        """Run ``command(prepare())`` in the next batch: ``prepare`` (parsing, checks)
        in the batch's thread but outside the Controller's lock, ``command`` under it.
        Its result once the batch is durable; either one's error, raised."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        with self._cond:
            if self._closed:
                raise RuntimeError("the command batcher is closed")
            self._queue.append((prepare, command, future, loop))
            self._cond.notify()
        return await future

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        for thread in self._threads:
            thread.join(timeout=10)

    def _work(self) -> None:
        while True:
            with self._cond:
                while not self._queue and not self._closed:
                    self._cond.wait()
                if not self._queue:
                    return  # closed and drained
                jobs = self._queue[: self._max_batch]
                del self._queue[: self._max_batch]
                self.batches += 1
            self._run_batch(jobs)

    def _run_batch(self, jobs: list[_Job]) -> None:
        prepared: list[tuple[Any, BaseException | None]] = []
        for prepare, _, _, _ in jobs:
            try:
                prepared.append((prepare(), None))
            except Exception as error:  # this command's own failure
                prepared.append((None, error))
        outcomes: list[_Outcome] = []
        try:
            with self._controller.batch():
                for (_, command, future, _), (value, failed) in zip(jobs, prepared, strict=True):
                    if failed is not None:
                        outcomes.append((future, None, failed))
                        continue
                    try:
                        outcomes.append((future, command(value), None))
                    except Exception as error:  # this command's own failure
                        outcomes.append((future, None, error))
        except BaseException as error:  # the batch's write failed: nothing acknowledged
            outcomes = [(future, None, error) for _, _, future, _ in jobs]
        try:
            self._on_batch()
        finally:
            by_loop: dict[asyncio.AbstractEventLoop, list[_Outcome]] = {}
            for (_, _, _, loop), outcome in zip(jobs, outcomes, strict=True):
                by_loop.setdefault(loop, []).append(outcome)
            self._hand_back(by_loop)

    @staticmethod
    def _hand_back(by_loop: dict[asyncio.AbstractEventLoop, list[_Outcome]]) -> None:
        for loop, settled in by_loop.items():
            # A closed event loop refuses (RuntimeError): nobody waits there any more.
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(_settle, settled)


def _settle(outcomes: list[_Outcome]) -> None:
    for future, result, error in outcomes:
        if future.cancelled():
            continue  # the client went away; the command ran all the same
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)
