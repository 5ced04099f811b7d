"""Keeping a reader of the log (the views, the watch stream) up with it in a thread of
its own; reads of the views wait for them.

A command answered over REST is answered from the Controller's state once its events
are durable in the log; it does not wait for the views. Folding the views is one LMDB
write transaction with its own fsync, and the fold itself costs about as much CPU as
the command: on the answer's path it made a REST submit cost four times an embedded
one (ADR 0050). Here one thread folds whatever the log gained since its last run, in
batches: under load one views transaction covers many commands.

Read your writes still holds, for every reader: a read first asks for the position the
Controller (or the watch stream) had reached when the read began, and waits until the
views have folded it -- so a read that follows an acknowledged command, or a watch
frame the client saw, sees it. The wait is bounded (`WAIT_S`): if the views cannot get
there (a damaged view, a full disk, a stopped controller) the read fails naming why,
never answers from views that miss what it must see.

The follower folds at most every `PAUSE_S` while nobody waits (so a burst of commands
shares a transaction), and at once when a read waits.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Final

from costart.logging_setup import library_logger

log = library_logger("costart.serve")

WAIT_S: Final = 60.0
"""The longest a read waits for the views (then `ViewsBehindError`)."""
PAUSE_S: Final = 0.25
"""The longest new events wait for a fold while no read waits for them."""


class ViewsBehindError(RuntimeError):
    """The views did not reach the position a read needs within `WAIT_S`."""


class LogFollower:
    """Runs ``catch_up`` (fold the log's new events into a reader -- the views, the
    watch stream's ring; returns the position it reached) in its own thread whenever
    there is something to fold; `wait_for` blocks until it reached a position.
    Thread-safe. ``pause_s`` 0: fold at once on every poke (the watch stream)."""

    def __init__(
        self,
        catch_up: Callable[[], int],
        position: int,
        *,
        check: Callable[[], None] = lambda: None,
        pause_s: float = PAUSE_S,
        wait_s: float = WAIT_S,
        name: str = "views",
    ) -> None:
        """``position``: where the views are now; ``check``: raises if the source of
        events stopped (then waiting is pointless: readers get its error)."""
        self._catch_up = catch_up
        self._check = check
        self._pause_s = pause_s
        self._wait_s = wait_s
        self._cond = threading.Condition()
        self._position = position
        self._wanted = position  # the highest position anyone asked for
        self._waiting = 0  # readers blocked in `wait_for`
        self._poked = False
        self._error: BaseException | None = None  # the last run's failure, until one succeeds
        self._runs = 0
        self._stop = False
        self.name = name
        self._thread = threading.Thread(target=self._run, name=f"costart-{name}", daemon=True)
        self._thread.start()

    @property
    def position(self) -> int:
        """The position the views have folded (no waiting)."""
        return self._position

    @property
    def runs(self) -> int:
        """How many catch-ups have run (tests: one covers many commands)."""
        return self._runs

    def poke(self) -> None:
        """New events are in the log: fold them soon (within the pause)."""
        with self._cond:
            self._poked = True
            self._cond.notify_all()

    def wait_for(self, position: int) -> None:
        """Return once the views have folded everything up to ``position``. Raises the
        catch-up's error if it fails meanwhile, the source's if it stopped, and
        `ViewsBehindError` after `WAIT_S`."""
        if self._position >= position:
            return
        deadline = time.monotonic() + self._wait_s
        with self._cond:
            self._wanted = max(self._wanted, position)
            self._waiting += 1
            runs_before = self._runs  # an error of a run before this wait is not ours
            self._cond.notify_all()
            try:
                while self._position < position:
                    if self._error is not None and self._runs > runs_before:
                        raise self._error
                    self._check()
                    left = deadline - time.monotonic()
                    if left <= 0:
                        raise ViewsBehindError(
                            f"the {self.name} did not reach log position {position} within "
                            f"{self._wait_s:g}s (they are at {self._position})"
                        )
                    # Woken by each run; the slice re-checks a source that stopped.
                    self._cond.wait(min(left, 0.5))
            finally:
                self._waiting -= 1

    def stop(self) -> None:
        with self._cond:
            self._stop = True
            self._cond.notify_all()
        self._thread.join(timeout=10)

    def _due(self) -> bool:
        return self._waiting > 0 and self._wanted > self._position

    def _run(self) -> None:
        while True:
            with self._cond:
                # Sleep until poked; then gather more pokes for up to a pause, unless a
                # reader waits (a waiting reader sets `_wanted` and wakes us).
                while not (self._poked or self._due() or self._stop):
                    self._cond.wait()
                if self._stop:
                    return
                if self._pause_s and not self._due():
                    self._cond.wait_for(lambda: self._due() or self._stop, self._pause_s)
                if self._stop:
                    return
                self._poked = False
            try:
                reached = self._catch_up()
                error = None
            except Exception as failure:  # handed to the readers; the next poke retries
                log.error("catch-up failed", reader=self.name, error=str(failure))
                reached, error = self._position, failure
            with self._cond:
                self._runs += 1
                self._position = max(self._position, reached)
                self._error = error
                self._cond.notify_all()
            if error is not None:
                time.sleep(
                    max(self._pause_s, PAUSE_S)
                )  # a failing store is not retried in a tight loop
