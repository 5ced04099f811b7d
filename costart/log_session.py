"""The Controller's log session: the store opened, the state restored, snapshots, fencing.

A `LogSession` is the eventsourcing library's `Application` for costart's log: the store
chosen by configuration (``PERSISTENCE_MODULE``), the msgspec mapper, the snapshot store
and the `LogWriter` that appends. Opening one checks what is known of the log from
outside it (ADR 0048), claims the host's term if given (ADR 0027), then restores the
state — from the newest valid snapshot plus the log's tail, or from a standby's warm
state — which the Controller given this session then keeps current with its commands.

It knows nothing of commands: the Controller asks `snapshot_due` after each command and
calls `snapshot_now`/`last_known` under its lock, so the state does not move meanwhile.
`costart.bootstrap` builds one for every entry point; a Controller built directly (the
tests) builds a plain one of its own.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from uuid import UUID

from eventsourcing.application import Application
from eventsourcing.persistence import ApplicationRecorder, Mapper

from costart.domain.events import DomainEvent
from costart.domain.world import World
from costart.eventlog.anchor import chain_hash, check_snapshot_reached
from costart.eventlog.backends import MEMORY_MODULE, PERSISTENCE_MODULE
from costart.eventlog.capabilities import Capability, declaring
from costart.eventlog.closing import closed_if_failed
from costart.eventlog.codec import MsgspecMapper
from costart.eventlog.event_reading import RecorderSource, read_events
from costart.eventlog.host_term import check_term, claim_term
from costart.eventlog.restore import restore
from costart.eventlog.rollback import Expectations, LastKnown
from costart.eventlog.snapshots import SnapshotStore
from costart.log_writer import LogWriter
from costart.logging_setup import library_logger

log = library_logger("costart.controller")

SNAPSHOT_EVERY = "COSTART_SNAPSHOT_EVERY"  # events between automatic snapshots; 0 = never
DEFAULT_SNAPSHOT_EVERY = 10_000


class LogSession(Application[UUID]):
    """One controller's hold on the log: opened, checked, restored, fenced.

    ``world`` is the state restored when the session opened; the Controller given the
    session folds its commands into that same object, so the snapshots written here are
    of the live state.
    """

    # The library names the store's tables and environment prefix after the application:
    # the name the log was always written under.
    name = "costart"
    # The log in memory unless configured otherwise (`costart.eventlog.memory`).
    env = {PERSISTENCE_MODULE: MEMORY_MODULE}

    def __init__(
        self,
        env: Mapping[str, str] | None = None,
        *,
        restart_of: LogSession | None = None,
        epoch: int | None = None,
        warm: World | None = None,
        term: int | None = None,
        expect: Expectations | None = None,
    ) -> None:
        """``restart_of``: open the same log and snapshots as that (crashed) session,
        restoring from its newest snapshot plus the tail — how the simulator and tests
        model a controller crash on an in-process store.

        High availability (ADR 0009): ``epoch`` is the store lease epoch this session
        holds; every append carries it and is refused once another process took the
        lease. Only a store that queues writes (LMDB) takes it here; a PostgreSQL store
        reads its epoch from ``COSTART_LEASE_EPOCH`` in ``env`` (ADR 0010). ``warm`` is a
        state a standby kept up with the log: the session adopts it (and folds whatever
        the log holds beyond it) instead of restoring.

        The host's leadership term instead of costart's lease (ADR 0027): ``term`` is
        claimed in the store before the state is read (`StaleTermError` if the log
        already has a newer term), and every append carries it, so once the host's next
        leader claimed its term this one cannot write.

        ``expect``: what is known of the log from outside it (the host's last known
        position and term, the views' anchor), checked before anything is read or
        written: a store rolled back behind it is refused (ADR 0048)."""
        if term is not None and epoch is not None:
            raise ValueError("term: give the host's term or a lease epoch, not both")
        if term is not None:
            check_term(term)
        self._restart_of = restart_of
        # A failed opening closes what it opened, here (`closed_if_failed`): left to
        # the collector, a database pool's close may run on one of its workers.
        with closed_if_failed(self):
            super().__init__(env=dict(env) if env is not None else None)
            if expect is not None:
                expect.check(self.recorder)
            if term is not None:
                claim_term(self.recorder, term)
            self.snapshots_store: SnapshotStore = (
                restart_of.snapshots_store
                if restart_of is not None
                else SnapshotStore(self.factory.aggregate_recorder(purpose="snapshots"))
            )
            self.snapshot_every = int(self.env.get(SNAPSHOT_EVERY, str(DEFAULT_SNAPSHOT_EVERY)))
            self._last_snapshot_position = 0
            self.writer = LogWriter(self.recorder, self._msgspec_mapper, epoch)
            self.world = self._restore() if warm is None else self._adopt(warm)
            self.writer.start_at(self.world.position)
            # Only the opening reads the crashed session: holding it would keep every
            # crashed session (and its state) alive, a chain of them.
            self._restart_of = None

    def close(self) -> None:
        """Close the store (an opening that failed before its store was made has none
        to close)."""
        if getattr(self, "factory", None) is not None:
            super().close()

    def construct_recorder(self) -> ApplicationRecorder:
        if self._restart_of is not None:
            return self._restart_of.recorder
        return super().construct_recorder()

    def construct_mapper(self) -> Mapper[UUID]:
        self._msgspec_mapper = MsgspecMapper(
            compressor=self.factory.compressor(), cipher=self.factory.cipher()
        )
        return self._msgspec_mapper

    # --- opening ---------------------------------------------------------------------

    def _restore(self) -> World:
        """Start from the newest valid snapshot (falling back past corrupt ones), then
        fold the log's tail."""
        world, snapshot, skipped = restore(
            self.snapshots_store, RecorderSource(self.recorder, self._msgspec_mapper)
        )
        for error in skipped:
            log.warning("snapshot skipped", position=error.position, error=str(error))
        if snapshot is not None:
            # Never start from a snapshot ahead of (or beside) the log it was taken of.
            check_snapshot_reached(self.recorder, snapshot.position, snapshot.log_hash)
            self._last_snapshot_position = snapshot.position
            log.info(
                "restored from snapshot",
                position=snapshot.position,
                tail=world.position - snapshot.position,
            )
        return world

    def _adopt(self, warm: World) -> World:
        """Start from a standby's warm state: no replay, only the log's tail beyond it.
        The next automatic snapshot is counted from the adopted position."""
        adopted = self._last_snapshot_position = warm.position
        self._catch_up(warm)
        log.info("adopted warm state", position=warm.position, tail=warm.position - adopted)
        return warm

    def _catch_up(self, world: World) -> None:
        """Fold whatever the log holds beyond ``world``'s position."""
        for position, event in self.read_events(world.position):
            world.apply(event)
            world.position = position

    # --- reading the log -------------------------------------------------------------

    def read_events(
        self, after: int = 0, until: int | None = None
    ) -> Iterator[tuple[int, DomainEvent]]:
        """Events at log positions ``after < p <= until``, in log order."""
        return read_events(self.recorder, self._msgspec_mapper, after, until)

    # --- fencing ---------------------------------------------------------------------

    @property
    def epoch(self) -> int | None:
        """The lease epoch this session writes under (None: no lease)."""
        return self.writer.epoch

    @property
    def term(self) -> int | None:
        """The host's term this session writes under (None: not fenced by one)."""
        fenced = declaring(self.recorder, Capability.HOST_TERM)
        return fenced.term if fenced is not None else None

    @property
    def stopped(self) -> BaseException | None:
        """Why this session's writer stopped (a failed or fenced write), or None."""
        return self.writer.stopped

    # --- what is kept of the log: the host's record, snapshots -------------------------
    # Call these with the Controller's lock held: the state must not move meanwhile.

    def last_known(self) -> LastKnown:
        """The durable position of the live state, the log's chain hash there and the
        host term (if any) this session writes under (ADR 0048)."""
        position = self.world.position
        self.writer.await_durable(position)
        log_hash = chain_hash(self.recorder, position)
        return LastKnown(position=position, log_hash=log_hash, term=self.term)

    def snapshot_now(self) -> int:
        """Write a snapshot of the whole state at the current position; returns it."""
        world = self.world
        self.writer.await_durable(world.position)  # never ahead of the log
        self._catch_up(world)
        log_hash = chain_hash(self.recorder, world.position)
        self.snapshots_store.write(world, log_hash)
        self._last_snapshot_position = world.position
        return world.position

    def snapshot_due(self) -> bool:
        """Have ``COSTART_SNAPSHOT_EVERY`` events passed since the last snapshot?"""
        return bool(self.snapshot_every) and (
            self.world.position - self._last_snapshot_position >= self.snapshot_every
        )
