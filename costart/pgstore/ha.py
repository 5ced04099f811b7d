"""Leader and warm standby on one PostgreSQL log, on any number of hosts.

Mirrors the LMDB design of ADR 0009 with the lease in PostgreSQL (`lease.PgLease`):

* a **leader** takes the lease, builds its Controller with ``COSTART_LEASE_EPOCH`` set to
  the epoch (every append is then fenced in its own transaction), and renews the lease
  from a `LeaseKeeper` thread, which reports the loss once another epoch began;
* a **standby** restores once (newest snapshot + tail), tails the log into a warm
  `World`, and when the lease is free or expired takes it (epoch + 1) and folds the log
  to its end one last time -- final, since the old epoch is fenced from then on. The
  caller builds the promoted Controller from that state.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Final

import structlog
from eventsourcing.persistence import InfrastructureFactory
from eventsourcing.utils import Environment

from costart.domain.world import World
from costart.pgstore.factory import Factory
from costart.pgstore.lease import DEFAULT_LEASE_MS, PgLease
from costart.pgstore.settings import LEASE_EPOCH
from costart.store.codec import MsgspecMapper
from costart.store.reading import read_events
from costart.store.snapshots import SnapshotStore

log = structlog.get_logger("costart.standby")

APPLICATION_NAME: Final = "costart"  # the Controller's name: its tables and env prefix
DEFAULT_POLL_S: Final = 0.05


def open_factory(env: Mapping[str, str]) -> Factory:
    """The PostgreSQL factory a Controller with this environment would use."""
    factory = InfrastructureFactory.construct(Environment(APPLICATION_NAME, dict(env)))
    if not isinstance(factory, Factory):
        factory.close()
        raise ValueError("a PostgreSQL lease needs PERSISTENCE_MODULE=costart.pgstore")
    return factory


def open_lease(
    factory: Factory, holder: str | None = None, duration_ms: int = DEFAULT_LEASE_MS
) -> PgLease:
    """The lease of the Controller's log in ``factory``'s database (table created)."""
    lease = PgLease(factory.datastore, f"{APPLICATION_NAME}_events", holder, duration_ms)
    lease.ensure_table()
    return lease


def fenced_env(env: Mapping[str, str], epoch: int) -> dict[str, str]:
    """The environment of a Controller whose appends carry ``epoch``."""
    return {**env, LEASE_EPOCH: str(epoch)}


class LeaseKeeper:
    """Renews ``lease`` every third of its duration in a daemon thread; calls
    ``on_lost(reason)`` once, from that thread, when another epoch began."""

    def __init__(self, lease: PgLease, on_lost: Callable[[str], None]) -> None:
        if lease.epoch is None:
            raise ValueError("the lease is not held")
        self.lease = lease
        self.epoch = lease.epoch
        self._on_lost = on_lost
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="costart-lease", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join(timeout=5)

    def _run(self) -> None:
        while not self._stop.wait(self.lease.renew_interval_s):
            try:
                held = self.lease.renew()
            except Exception as error:  # a transient database error: retry next round
                log.warning("lease renewal failed", epoch=self.epoch, error=str(error))
                continue
            if not held:
                log.error("lease lost", epoch=self.epoch)
                self._on_lost("another process took the lease")
                return


class Standby:
    """Tails the log into a warm `World` until it holds the lease. One thread uses it."""

    def __init__(self, factory: Factory, lease: PgLease, *, poll_s: float = DEFAULT_POLL_S):
        if poll_s <= 0:
            raise ValueError("the poll interval must be positive")
        self.lease = lease
        self.poll_s = poll_s
        self.recorder = factory.application_recorder()
        self.mapper = MsgspecMapper(compressor=factory.compressor(), cipher=factory.cipher())
        snapshots = SnapshotStore(factory.aggregate_recorder(purpose="snapshots"))
        _snapshot, world, skipped = snapshots.newest_valid()
        for error in skipped:
            log.warning("snapshot skipped", position=error.position, error=str(error))
        self.world = world or World()
        self.tail()

    def tail(self) -> int:
        """Fold whatever the log holds beyond the warm state; how many events."""
        folded = 0
        for position, event in read_events(self.recorder, self.mapper, self.world.position):
            self.world.apply(event)
            self.world.position = position
            folded += 1
        return folded

    def wait_for_lease(self, stop: threading.Event | None = None) -> int | None:
        """Tail until the lease is free or expired, take it, fold the log to its end.
        Returns the new epoch (None if ``stop`` was set first)."""
        stop = stop or threading.Event()
        while not stop.is_set():
            self.tail()
            current = self.lease.read()
            if current is None or current.expired:
                epoch = self.lease.try_acquire()
                if epoch is not None:
                    self.tail()  # nothing of the old epoch can land from here on
                    log.info("lease acquired", epoch=epoch, position=self.world.position)
                    return epoch
            stop.wait(self.poll_s)
        return None
