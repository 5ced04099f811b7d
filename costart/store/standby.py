"""A warm standby: the leader's state kept up with its log, and a watch on its lease.

The standby opens the leader's log (the same LMDB environment on one host, or the same
PostgreSQL database from another host), restores once
(newest snapshot + tail), then polls the log's end and folds what is new into its
`World`. Meanwhile it reads the lease; once the lease is free or expired it takes it
(epoch + 1, `Lease.try_acquire`) and folds the log to its end one last time. Every
append of the old leader is fenced from the moment the new epoch is stored, so the log
read *after* acquiring is final: the caller builds its Controller from `world` with the
new epoch (``Controller(..., epoch=, warm=)``) without replaying the log.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any, Final

import structlog
from eventsourcing.persistence import ApplicationRecorder, InfrastructureFactory
from eventsourcing.utils import Environment

from costart.domain.world import World
from costart.store.anchor import check_snapshot_reached
from costart.store.codec import MsgspecMapper
from costart.store.factory import Factory
from costart.store.keeper import LeaseLike
from costart.store.reading import read_events
from costart.store.snapshots import SnapshotStore

log = structlog.get_logger("costart.standby")

APPLICATION_NAME: Final = "costart"  # the Controller's name (its log and env prefix)
DEFAULT_POLL_S: Final = 0.05


def open_factory(env: Mapping[str, str]) -> Factory:
    """The LMDB factory a Controller with this environment would use. HA needs the lease
    in the log's environment, so any other persistence module is refused."""
    factory = InfrastructureFactory.construct(Environment(APPLICATION_NAME, dict(env)))
    if not isinstance(factory, Factory):
        raise ValueError(
            "leases and standbys need the LMDB store (PERSISTENCE_MODULE=costart.store)"
        )
    return factory


class Standby:
    """Tails the log into a warm `World` until it holds the lease. One thread uses it."""

    def __init__(
        self,
        factory: InfrastructureFactory[Any],
        lease: LeaseLike,
        *,
        poll_s: float = DEFAULT_POLL_S,
    ) -> None:
        if poll_s <= 0:
            raise ValueError("the poll interval must be positive")
        self.lease = lease
        self.poll_s = poll_s
        self.recorder: ApplicationRecorder = factory.application_recorder()
        self.mapper = MsgspecMapper(compressor=factory.compressor(), cipher=factory.cipher())
        self.snapshots = SnapshotStore(factory.aggregate_recorder(purpose="snapshots"))
        snapshot, world, skipped = self.snapshots.newest_valid()
        for error in skipped:
            log.warning("snapshot skipped", position=error.position, error=str(error))
        if snapshot is not None:
            check_snapshot_reached(self.recorder, snapshot.position, snapshot.log_hash)
        self.world = world or World()
        self.tail()
        log.info(
            "standby tailing",
            position=self.world.position,
            snapshot=snapshot.position if snapshot is not None else None,
            holder=lease.holder,
        )

    def tail(self) -> int:
        """Fold whatever the log holds beyond the warm state; how many events."""
        world = self.world
        folded = 0
        for position, event in read_events(self.recorder, self.mapper, world.position):
            world.apply(event)
            world.position = position
            folded += 1
        return folded

    def wait_for_lease(self, stop: threading.Event | None = None) -> int | None:
        """Tail until the lease is free or expired, take it, fold the log to its end.
        Returns the new epoch (None if ``stop`` was set first)."""
        stop = stop or threading.Event()
        while not stop.is_set():
            self.tail()
            current = self.lease.read()
            if self.lease.is_free(current):
                epoch = self.lease.try_acquire()
                if epoch is not None:
                    # Nothing of the old epoch can be appended from here on: this tail
                    # is the last one.
                    self.tail()
                    log.info(
                        "lease acquired",
                        epoch=epoch,
                        previous=current.holder if current is not None else None,
                        position=self.world.position,
                    )
                    return epoch
            stop.wait(self.poll_s)
        return None
