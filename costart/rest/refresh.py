"""Catching the views up once for many waiting requests (group commit for the views).

Every command answered over REST must be visible in the views before the answer leaves
(read your writes). A catch-up is one LMDB write transaction with its own fsync, so one
per request serialised the server at about one fsync per request however many clients
were waiting (issue 17: 281 submits/s with 16 clients, the same as with one). Here a
request waits for a catch-up that *started after* its command was durable; while one
catch-up runs, every request that arrives waits for the next, and the first of them runs
it for all. A catch-up folds everything the log holds, so one covers them all.
"""

from __future__ import annotations

import threading
from collections.abc import Callable


class SharedRefresh:
    """``refresh()`` returns once a run of ``catch_up`` that started after the call
    began has finished; concurrent callers share runs. Thread-safe."""

    def __init__(self, catch_up: Callable[[], object]) -> None:
        self._catch_up = catch_up
        self._cond = threading.Condition()
        self._started = 0  # runs begun
        self._finished = 0  # the newest run that has finished (runs finish in order)
        self._running = False

    @property
    def runs(self) -> int:
        """How many catch-ups have run (tests: shared runs are fewer than callers)."""
        return self._finished

    def refresh(self) -> None:
        with self._cond:
            # A run already under way may have read the log before our events: only a
            # run that starts from now on is sure to see them.
            needed = self._started + 1
            while self._finished < needed:
                if not self._running:
                    self._running = True
                    self._started += 1
                    mine = self._started
                    break
                self._cond.wait()
            else:
                return
        succeeded = False
        try:
            self._catch_up()
            succeeded = True
        finally:
            with self._cond:
                self._running = False
                if succeeded:  # else the callers waiting for it run the next one
                    self._finished = mine
                self._cond.notify_all()
