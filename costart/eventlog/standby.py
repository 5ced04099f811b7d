"""A warm standby: the leader's state kept up with its log, and a watch on its lease.

The standby opens the leader's log (the same LMDB environment on one host, or the same
PostgreSQL database from another host), restores once
(newest snapshot + tail), then polls the log's end and folds what is new into its
`World`. Meanwhile it reads the lease; once the lease is free or expired it takes it
(epoch + 1, `Lease.try_acquire`) and folds the log to its end one last time. Every
append of the old leader is fenced from the moment the new epoch is stored, so the log
read *after* acquiring is final: the caller builds its Controller from `world` with the
new epoch (``bootstrap(..., epoch=, warm=)``) without replaying the log.

A store rolled back under a running standby (ADR 0048) is refused, not followed: the
standby remembers the position and chain hash it read the log to, and the newest lease
epoch it saw; a log that no longer reaches them, or an epoch that went back, raises
`StoreRolledBackError`. Whatever else it knows of the log from outside (the views'
anchor, the host's last known position) it checks before it restores.
"""

from __future__ import annotations

import threading
from typing import Any, Final

from eventsourcing.persistence import ApplicationRecorder, InfrastructureFactory

from costart.domain.world import World
from costart.eventlog.anchor import Anchor, anchor_at, check_reaches, check_snapshot_reached
from costart.eventlog.codec import MsgspecMapper
from costart.eventlog.errors import LogTailLostError, StoreRolledBackError
from costart.eventlog.event_reading import read_events
from costart.eventlog.lease_keeper import LeaseLike
from costart.eventlog.rollback import Expectations
from costart.eventlog.snapshots import SnapshotStore
from costart.logging_setup import library_logger

log = library_logger("costart.standby")

DEFAULT_POLL_S: Final = 0.05
SEEN: Final = "the standby had read the log to"


class Standby:
    """Tails the log into a warm `World` until it holds the lease. One thread uses it."""

    def __init__(
        self,
        factory: InfrastructureFactory[Any],
        lease: LeaseLike,
        *,
        poll_s: float = DEFAULT_POLL_S,
        expect: Expectations | None = None,
    ) -> None:
        if poll_s <= 0:
            raise ValueError("the poll interval must be positive")
        self.lease = lease
        self.poll_s = poll_s
        self.recorder: ApplicationRecorder = factory.application_recorder()
        if expect is not None:
            expect.check(self.recorder)
        self._seen = Anchor(0)
        self._epoch_seen = 0
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

    @property
    def seen(self) -> Anchor:
        """The log position (and chain hash) this standby has read the log to."""
        return self._seen

    def tail(self) -> int:
        """Fold whatever the log holds beyond the warm state; how many events.
        `StoreRolledBackError` if the log no longer reaches what was read before."""
        try:
            check_reaches(self.recorder, self._seen, SEEN)
        except LogTailLostError as error:
            raise StoreRolledBackError(
                f"{error}; the store was rolled back under the standby",
                position=error.position,
                log_end=error.log_end,
            ) from None
        world = self.world
        folded = 0
        for position, event in read_events(self.recorder, self.mapper, world.position):
            world.apply(event)
            world.position = position
            folded += 1
        if world.position != self._seen.position:  # also a restore from a snapshot
            self._seen = anchor_at(self.recorder, world.position)
        return folded

    def _read_lease(self) -> Any:
        """The stored lease; `StoreRolledBackError` if its epoch went back."""
        current = self.lease.read()
        epoch = 0 if current is None else current.epoch
        if epoch < self._epoch_seen:
            raise StoreRolledBackError(
                f"the lease's epoch is {epoch}, the standby saw epoch {self._epoch_seen}: "
                "the store was rolled back under the standby",
                position=self._seen.position,
                log_end=self.recorder.max_notification_id() or 0,
            )
        self._epoch_seen = epoch
        return current

    def wait_for_lease(self, stop: threading.Event | None = None) -> int | None:
        """Tail until the lease is free or expired, take it, fold the log to its end.
        Returns the new epoch (None if ``stop`` was set first)."""
        stop = stop or threading.Event()
        while not stop.is_set():
            self.tail()
            current = self._read_lease()
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
