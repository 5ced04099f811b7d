"""Appending the Controller's events: in command order, acknowledged once durable.

With a store that can queue writes (`Capability.DEFERRED_INSERTS`, the LMDB store), a
command queues its events while it holds the Controller's lock — so the log order is the
command order — and waits for them after releasing it, so concurrent commands share one
fsync (group commit). With other stores the append is synchronous under the lock.

Fail-stop: the Controller folds queued events into its state before they are durable (the
next command must see them). If a write then fails, that state is ahead of the log, so
the writer stops: the failed command and every later one raise `ControllerStoppedError`,
and the store refuses every later queued write of this writer (its `WriteChain`); a new
Controller restores from the log. Databases treat a failed fsync the same way.

Fencing (ADR 0009): a writer built with a lease ``epoch`` tags every queued write with
it; the store refuses writes whose epoch is no longer the stored one (`LeaseFencedError`),
which stops this writer like any other failed write. So does a write refused because
the host's leadership term moved on (`StaleTermError`, ADR 0027).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

from eventsourcing.persistence import ApplicationRecorder

from costart.domain.events import DomainEvent
from costart.eventlog.capabilities import Capability, WriteChain, declaring
from costart.eventlog.codec import MsgspecMapper
from costart.eventlog.errors import LeaseFencedError, OutOfSpaceError, StaleTermError
from costart.logging_setup import library_logger

log = library_logger("costart.controller")


class ControllerStoppedError(RuntimeError):
    """A write failed (or another writer took over the log); this controller must be
    restarted from the log before it may act again. Its ``__cause__`` is why."""

    @property
    def out_of_space(self) -> bool:
        """True if the write that stopped the controller met a full disk."""
        seen: BaseException | None = self.__cause__
        while seen is not None:
            if isinstance(seen, OutOfSpaceError):
                return True
            seen = seen.__cause__
        return False


class LogWriter:
    def __init__(
        self, recorder: ApplicationRecorder, mapper: MsgspecMapper, epoch: int | None = None
    ) -> None:
        """``epoch``: the lease epoch this writer holds (None: no lease, not fenced)."""
        self._recorder = recorder
        self._mapper = mapper
        deferred = declaring(recorder, Capability.DEFERRED_INSERTS)
        self._queue = deferred.insert_events_deferred if deferred is not None else None
        if epoch is not None and self._queue is None:
            raise ValueError("fencing needs a store that queues writes (the LMDB store)")
        self.epoch = epoch
        self._chain = WriteChain(epoch)
        self._local = threading.local()
        # The lock taken directly where nothing waits (most acknowledgements); the
        # condition only to wait, or to wake the `_waiting` threads.
        self._durable_lock = threading.Lock()
        self._durable = threading.Condition(self._durable_lock)
        self._waiting = 0
        self._durable_position = 0
        self.stopped: BaseException | None = None

    def start_at(self, position: int) -> None:
        """Everything up to ``position`` is already in the log (a restored state)."""
        with self._durable:
            self._durable_position = max(self._durable_position, position)

    def check_running(self) -> None:
        if self.stopped is not None:
            raise ControllerStoppedError(
                f"the controller stopped after a failed write: {self.stopped}"
            ) from self.stopped

    def append(self, events: Sequence[DomainEvent], first_position: int) -> None:
        """Append (or queue) ``events``, expected at ``first_position`` onwards. Call with
        the Controller's lock held; then `settle` after releasing it."""
        self.check_running()
        stored = self._mapper.to_stored_events(events)
        expected = range(first_position, first_position + len(stored))
        if self._queue is None:
            try:
                ids = self._recorder.insert_events(stored)
            except BaseException as error:
                self._stop(error)
                raise ControllerStoppedError(str(error)) from error
            # Durable on return: no position to publish (see `await_durable`), only the
            # positions to check.
            if ids and list(ids) != list(expected):
                self._positions_differ(ids, expected)
            return
        pending = getattr(self._local, "pending", None)
        if pending is None:
            pending = self._local.pending = []
        pending.append((self._queue(stored, self._chain), expected))

    def settle(self) -> None:
        """Wait for this thread's queued writes (every one: the store may be waiting on
        this thread to lead the shared commit). Raises if any failed."""
        if self._queue is None:
            return  # synchronous store: every append was acknowledged already
        pending = getattr(self._local, "pending", None)
        if not pending:
            return
        self._local.pending = []
        failure: BaseException | None = None
        for write, expected in pending:
            try:
                ids = write.wait()
            except BaseException as error:
                failure = failure or error
                self._stop(error)
                continue
            self._acknowledge(ids, expected)
        if failure is not None:
            raise ControllerStoppedError(f"a write failed: {failure}") from failure
        self.check_running()

    def await_durable(self, position: int) -> None:
        """Block until the log holds every event up to ``position`` (or the writer
        stopped): a position this writer appended or started at. On a synchronous store
        that is already so (an append is durable when it returns), as in `settle`."""
        if self._queue is not None and self._durable_position < position:
            # The position only grows: no lock needed to see that it is reached.
            with self._durable:
                self._waiting += 1
                try:
                    self._durable.wait_for(
                        lambda: self._durable_position >= position or self.stopped is not None
                    )
                finally:
                    self._waiting -= 1
        self.check_running()

    def _acknowledge(self, ids: list[int], expected: range) -> None:
        """A queued write is durable: publish its position to `await_durable`."""
        if ids != list(expected):
            self._positions_differ(ids, expected)
            return
        with self._durable_lock:
            self._durable_position = max(self._durable_position, expected[-1])
            if self._waiting:
                self._durable.notify_all()

    def _positions_differ(self, ids: Sequence[int], expected: range) -> None:
        # Another process appended in between: our state is not the log's.
        self._stop(RuntimeError(f"log positions {list(ids)[:1]}.. differ from expected {expected}"))

    def _stop(self, error: BaseException) -> None:
        with self._durable:
            first = self.stopped is None
            if first:
                self.stopped = error
            self._durable.notify_all()
        if first and isinstance(error, LeaseFencedError):
            log.error("write fenced", epoch=error.epoch, current_epoch=error.current)
        elif first and isinstance(error, StaleTermError):
            log.error(
                "write fenced by the host's term", term=error.term, current_term=error.current
            )
