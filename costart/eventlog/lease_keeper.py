"""Keeping a held lease: renew it every third of its duration, and say when it is lost.

The keeper is how a leader notices it was deposed (another process took the lease after
it expired, e.g. while this one was paused) without waiting for its next append to be
fenced. It also ends the leadership of a controller that stopped (a failed write): such
a controller serves no more writes, so it should make way for the standby.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, Protocol

from costart.logging_setup import library_logger

log = library_logger("costart.lease")


class LeaseLike(Protocol):
    """What leadership needs of a lease, wherever it is stored (the LMDB environment's
    `costart.store.lease.Lease`, PostgreSQL's `costart.pgstore.lease.PgLease`)."""

    @property
    def epoch(self) -> int | None: ...

    @property
    def holder(self) -> str: ...

    @property
    def renew_interval_s(self) -> float: ...

    def read(self) -> Any: ...

    def is_free(self, record: Any) -> bool: ...

    def try_acquire(self) -> int | None: ...

    def renew(self) -> bool: ...

    def release(self) -> None: ...


class LeaseKeeper:
    """Renews ``lease`` in a daemon thread. Calls ``on_lost(reason)`` once, from that
    thread, when the lease is lost or ``check()`` returns a reason to give up."""

    def __init__(
        self,
        lease: LeaseLike,
        on_lost: Callable[[str], None],
        check: Callable[[], str | None] = lambda: None,
    ) -> None:
        if lease.epoch is None:
            raise ValueError("the lease is not held")
        self.lease = lease
        self.epoch = lease.epoch
        self._on_lost = on_lost
        self._check = check
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="costart-lease", daemon=True)
        self.lost: str | None = None

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join(timeout=5)

    def _run(self) -> None:
        while not self._stop.wait(self.lease.renew_interval_s):
            reason = self._check()
            if reason is None:
                try:
                    if not self.lease.renew():
                        reason = "another process took the lease"
                except Exception as error:  # a transient store error: retry next round
                    log.warning("lease renewal failed", epoch=self.epoch, error=str(error))
                    continue
            if reason is not None:
                self.lost = reason
                log.error("lease lost", epoch=self.epoch, reason=reason)
                self._on_lost(reason)
                return
