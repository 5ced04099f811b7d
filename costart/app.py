"""The Controller: the co-start application the embedding cluster controller calls.

Commands load a `GroupUnit` (copies of the group's aggregates), run a domain command on
it, append all its events as one atomic write (through `costart.log_writer.LogWriter`),
and only then fold them into the live `World`. A command that raises changes nothing. On
a store that queues writes the fold happens before the write is durable and the command
is acknowledged after it; a failed write stops the controller (`ControllerStoppedError`)
and a new one restores from the log (ADR 0011). Persistence is the eventsourcing
library's, chosen by configuration (``PERSISTENCE_MODULE``); time comes from an injected
clock (integer nanoseconds). Entry points build a Controller through `costart.bootstrap`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from types import TracebackType
from typing import Any, Protocol
from uuid import UUID

import structlog
from eventsourcing.application import Application
from eventsourcing.persistence import ApplicationRecorder, Mapper
from eventsourcing.popo import POPOFactory

from costart.domain import decisions as dec
from costart.domain import failures, lifecycle, node_loss, scheduling
from costart.domain.aggregates import GroupUnit
from costart.domain.cluster_stream import ClusterUnit
from costart.domain.errors import DomainError, NotFound
from costart.domain.events import DomainEvent, NodeStatus
from costart.domain.spec import SpecFormat, parse_spec
from costart.domain.spec_types import FailureReason, GroupSpec
from costart.domain.states import GroupState, MemberState
from costart.domain.world import World
from costart.log_writer import LogWriter
from costart.replay.rebuild import restore
from costart.replay.source import RecorderSource
from costart.store.codec import MsgspecMapper
from costart.store.memory import MemoryApplicationRecorder
from costart.store.reading import read_events
from costart.store.snapshots import SnapshotStore

log = structlog.get_logger("costart.controller")

Clock = Callable[[], int]
SNAPSHOT_EVERY = "COSTART_SNAPSHOT_EVERY"  # events between automatic snapshots; 0 = never
DEFAULT_SNAPSHOT_EVERY = 10_000


def _record_hash(recorder: object, position: int) -> bytes | None:
    """The log's chain hash at ``position`` when the store keeps a hash chain."""
    record_hash = getattr(recorder, "record_hash", None)
    return record_hash(position) if callable(record_hash) and position else None


class PlacementStep(Protocol):
    """The co-placement step as the Controller sees it (built in `costart.placement`)."""

    def check_feasible(self, spec: GroupSpec) -> None:
        """Raise `SpecError` naming the member if the group can never fit the cluster."""

    def decide(self, world: World, now_ns: int) -> list[dec.Decision]:
        """One scheduling session's decisions, from a read-only view of the state."""

    def check_node(self, node: str) -> None:
        """Raise `DomainError` if the cluster has no such node."""


def split_member_ref(ref: str) -> tuple[str, str]:
    """``"group/member"`` -> (group, member), with a clear error otherwise."""
    group, sep, member = ref.partition("/")
    if not sep or not group or not member or "/" in member:
        raise NotFound(f"bad member reference {ref!r}: expected 'GROUP/MEMBER'")
    return group, member


class Controller(Application[UUID]):
    """Co-start groups over an event-sourced log.

    ``clock`` returns the controller time in integer nanoseconds; it is read once per
    command and never goes backwards in the log (a smaller reading is raised to the last
    recorded time).
    """

    name = "costart"

    def __init__(
        self,
        env: Mapping[str, str] | None = None,
        clock: Clock | None = None,
        placement: PlacementStep | None = None,
        restart_of: Controller | None = None,
        *,
        epoch: int | None = None,
        warm: World | None = None,
    ) -> None:
        """``restart_of``: start over the same log and snapshots as that (crashed)
        controller, restoring from its newest snapshot plus the tail — how the simulator
        and tests model a controller crash on an in-process store.

        High availability (ADR 0009): ``epoch`` is the store lease epoch this controller
        holds; every append carries it and is refused once another process took the
        lease. Only a store that queues writes (LMDB) takes it here; a PostgreSQL store
        reads its epoch from ``COSTART_LEASE_EPOCH`` in ``env`` (ADR 0010). ``warm`` is a
        state a standby kept up with the log: the controller adopts it (and folds whatever
        the log holds beyond it) instead of restoring."""
        self._restart_of = restart_of
        super().__init__(env=dict(env) if env is not None else None)
        self._clock: Clock = clock or time.time_ns
        self.placement = placement
        self._lock = threading.RLock()
        self.world = World()
        self.snapshots_store: SnapshotStore = (
            restart_of.snapshots_store
            if restart_of is not None
            else SnapshotStore(self.factory.aggregate_recorder(purpose="snapshots"))
        )
        self.snapshot_every = int(self.env.get(SNAPSHOT_EVERY, str(DEFAULT_SNAPSHOT_EVERY)))
        self._last_snapshot_position = 0
        self._writer = LogWriter(self.recorder, self._msgspec_mapper, epoch)
        if warm is None:
            self._restore()
        else:
            self._adopt(warm)
        self._writer.start_at(self.world.position)
        # Only the construction reads the crashed controller: holding it would keep
        # every crashed controller (and its state) alive, a chain of them.
        self._restart_of = None

    def construct_recorder(self) -> ApplicationRecorder:
        if self._restart_of is not None:
            return self._restart_of.recorder
        if type(self.factory) is POPOFactory:
            return MemoryApplicationRecorder()  # the library's, with a cheaper append
        return super().construct_recorder()

    def construct_mapper(self) -> Mapper[UUID]:
        self._msgspec_mapper = MsgspecMapper(
            compressor=self.factory.compressor(), cipher=self.factory.cipher()
        )
        return self._msgspec_mapper

    # --- reading the log -------------------------------------------------------------

    def read_events(
        self, after: int = 0, until: int | None = None
    ) -> Iterator[tuple[int, DomainEvent]]:
        """Events at log positions ``after < p <= until``, in log order."""
        return read_events(self.recorder, self._msgspec_mapper, after, until)

    def _restore(self) -> None:
        """Start from the newest valid snapshot (falling back past corrupt ones), then
        fold the log's tail."""
        world, snapshot, skipped = restore(
            self.snapshots_store, RecorderSource(self.recorder, self._msgspec_mapper)
        )
        for error in skipped:
            log.warning("snapshot skipped", position=error.position, error=str(error))
        if snapshot is not None:
            self._last_snapshot_position = snapshot.position
            log.info(
                "restored from snapshot",
                position=snapshot.position,
                tail=world.position - snapshot.position,
            )
        self.world = world

    def _adopt(self, warm: World) -> None:
        """Start from a standby's warm state: no replay, only the log's tail beyond it.
        The next automatic snapshot is counted from the adopted position."""
        self.world = warm
        adopted = self._last_snapshot_position = warm.position
        self._catch_up()
        log.info(
            "adopted warm state", position=self.world.position, tail=self.world.position - adopted
        )

    @property
    def epoch(self) -> int | None:
        """The lease epoch this controller writes under (None: no lease)."""
        return self._writer.epoch

    @property
    def stopped(self) -> BaseException | None:
        """Why this controller stopped (a failed or fenced write), or None if running."""
        return self._writer.stopped

    def _catch_up(self) -> None:
        """Fold whatever the log holds beyond the live state's position."""
        for position, event in self.read_events(self.world.position):
            self.world.apply(event)
            self.world.position = position

    def snapshot_now(self) -> int:
        """Write a snapshot of the whole state at the current position; returns it."""
        with self._lock:
            self._writer.await_durable(self.world.position)  # never ahead of the log
            self._catch_up()
            log_hash = _record_hash(self.recorder, self.world.position)
            self.snapshots_store.write(self.world, log_hash)
            self._last_snapshot_position = self.world.position
            return self.world.position

    def _snapshot_if_due(self) -> None:
        due = self.snapshot_every and (
            self.world.position - self._last_snapshot_position >= self.snapshot_every
        )
        if due:
            self.snapshot_now()

    # --- the command path ------------------------------------------------------------

    def _now(self, at_ns: int | None = None) -> int:
        reading = self._clock() if at_ns is None else at_ns
        return max(reading, self.world.clock_ns)

    def _unit(self, name: str) -> GroupUnit:
        group = self.world.group_named(name)
        return GroupUnit(group, self.world.members_of(group))

    def _commit(self, *units: GroupUnit | ClusterUnit) -> list[DomainEvent]:
        """Append the units' events as one atomic write, then fold them into the state.
        Call inside `_command` (the lock is held; the write is acknowledged after it)."""
        # Collected before the write: a unit whose write or fold fails is dropped (a
        # failed write stops the controller; a failed fold raises out of the command).
        if len(units) == 1:
            events = units[0].collect_events()
        else:
            events = [e for unit in units for e in unit.collect_events()]
        if not events:
            return events
        world = self.world
        first = world.position + 1
        self._writer.append(events, first)
        apply = world.apply
        for position, event in enumerate(events, first):
            apply(event)
            world.position = position
        return events

    def _command(self) -> _CommandScope:
        """One or more commands: decided and queued under the lock, acknowledged after
        it (so concurrent commands share one fsync), then a snapshot if one is due."""
        return _CommandScope(self)

    def _on_group(self, name: str, command: Callable[[GroupUnit, int], Any]) -> list[DomainEvent]:
        with self._command():
            unit = self._unit(name)
            command(unit, self._now())
            return self._commit(unit)

    # --- commands --------------------------------------------------------------------

    def submit(self, spec: GroupSpec) -> GroupState:
        """Admit a validated spec. Raises `Conflict` if a live group has its name, or
        `SpecError` if the placement step says it can never fit the cluster."""
        group, _ = self.submit_events(spec)
        return group

    def submit_events(self, spec: GroupSpec) -> tuple[GroupState, list[DomainEvent]]:
        """`submit`, also returning the events it wrote (in log order)."""
        if self.placement is not None:
            self.placement.check_feasible(spec)
        with self._command():
            unit = lifecycle.submit(self.world, spec, self._now())
            written = self._commit(unit)
            group = self.world.group_by_id(unit.id)
        log.info("group submitted", group=spec.name, members=len(spec.members))
        return group, written

    def submit_document(self, data: bytes | str, fmt: SpecFormat) -> GroupState:
        """Parse, validate and submit a TOML or JSON spec (nothing written on error)."""
        return self.submit(parse_spec(data, fmt))

    def cancel(self, name: str) -> list[DomainEvent]:
        return self._on_group(name, lifecycle.cancel)

    def claim_ready(self, member: str, claim: str) -> list[DomainEvent]:
        group, name = split_member_ref(member)
        return self._on_group(group, lambda u, at: lifecycle.claim_ready(u, name, claim, at))

    def claim_failed(self, member: str, claim: str, reason: str) -> list[DomainEvent]:
        group, name = split_member_ref(member)
        return self._on_group(
            group, lambda u, at: failures.claim_failed(u, name, claim, reason, at)
        )

    def member_started(self, member: str) -> list[DomainEvent]:
        group, name = split_member_ref(member)
        return self._on_group(group, lambda u, at: lifecycle.start_member(u, name, at))

    def member_failed(
        self,
        member: str,
        reason: FailureReason,
        exit_code: int | None = None,
        replica: int | None = None,
    ) -> list[DomainEvent]:
        group, name = split_member_ref(member)
        return self._on_group(
            group,
            lambda u, at: failures.fail_member(u, name, reason, exit_code, replica, at),
        )

    def member_succeeded(self, member: str) -> list[DomainEvent]:
        group, name = split_member_ref(member)
        return self._on_group(group, lambda u, at: lifecycle.succeed_member(u, name, at))

    def scale(self, member: str, replicas: int) -> list[DomainEvent]:
        group, name = split_member_ref(member)
        return self._on_group(group, lambda u, at: lifecycle.scale_member(u, name, replicas, at))

    def tick(self, now_ns: int | None = None) -> list[DomainEvent]:
        """Fire due timers (reservation and barrier deadlines) at ``now_ns``."""
        fired: list[DomainEvent] = []
        with self._command():
            now = self._now(now_ns)
            world = self.world
            # Only the due groups, in submission order (`live_groups` order): firing one
            # group's timers never changes another group. Most live groups have no
            # deadline: the status test spares them a call.
            live = map(world.groups.__getitem__, world.live_names.values())
            timed = scheduling.TIMED
            due = [g for g in live if g.status in timed and scheduling.deadline_due(g, now)]
            for group in sorted(due, key=lambda g: g.submission_seq):
                unit = GroupUnit(group, self.world.members_of(group))
                if scheduling.on_tick(unit, now):
                    fired.extend(self._commit(unit))
        return fired

    def set_node_status(
        self, node: str, status: NodeStatus, now_ns: int | None = None
    ) -> list[DomainEvent]:
        """The embedding controller's report of a node. ``down`` turns into the loss of
        everything on it (release before the start, ``node-lost`` failures after it);
        ``drained`` only stops new placements. One atomic append for all of it."""
        if self.placement is not None:
            self.placement.check_node(node)
        with self._command():
            at = self._now(now_ns)
            cluster = ClusterUnit(self.world)
            if not cluster.report(self.world.node_status.get(node, "up"), node, status, at):
                return []
            units: list[GroupUnit | ClusterUnit] = [cluster]
            if status == "down":
                for group in self.world.live_groups():
                    unit = GroupUnit(group, self.world.members_of(group))
                    if node_loss.lose_node(unit, node, at):
                        units.append(unit)
            written = self._commit(*units)
        log.info("node status", node=node, status=status, events=len(written))
        return written

    def node_down(self, node: str, now_ns: int | None = None) -> list[DomainEvent]:
        """Shorthand for ``set_node_status(node, "down")``."""
        return self.set_node_status(node, "down", now_ns)

    def apply_decisions(self, decisions: Iterable[dec.Decision]) -> list[DomainEvent]:
        """Record the placement step's decisions, one atomic append per group decision.

        Decisions are applied in the given order; an invalid one raises `DomainError`
        (earlier ones stay recorded, the invalid one and later ones are not).
        """
        with self._command():
            return self._apply_decisions(decisions)

    def _apply_decisions(self, decisions: Iterable[dec.Decision]) -> list[DomainEvent]:
        written: list[DomainEvent] = []
        for decision in decisions:
            if (
                isinstance(decision, dec.SetPendReason)
                and self.world.group_named(decision.group).pend_reason == decision.reason
            ):
                # Most sessions repeat most reasons: `set_pend_reason` would record
                # nothing, so skip loading the unit.
                continue
            unit = self._unit(decision.group)
            _record_decision(unit, decision, self._now())
            written.extend(self._commit(unit))
        return written

    def schedule(self, now_ns: int | None = None) -> list[DomainEvent]:
        """Run one scheduling session: the placement step decides, we record."""
        if self.placement is None:
            raise DomainError("no placement step is attached to this controller")
        with self._command():
            decisions = self.placement.decide(self.world, self._now(now_ns))
            return self._apply_decisions(decisions)

    # --- queries ---------------------------------------------------------------------

    def may_start(self, member: str) -> bool:
        """The dispatch barrier: may the embedding controller start this member now?"""
        group_name, name = split_member_ref(member)
        with self._lock:
            self._writer.check_running()
            group = self.world.group_named(group_name)
            allowed = lifecycle.may_start(group, self.world.member_named(group, name))
            position = self.world.position
        if allowed:
            # Never let a member start on a barrier release that is not yet on disk.
            self._writer.await_durable(position)
        return allowed

    def group(self, name: str) -> GroupState:
        return self.world.group_named(name)

    def members(self, name: str) -> list[MemberState]:
        return self.world.members_of(self.world.group_named(name))

    def groups(self) -> list[GroupState]:
        return list(self.world.groups_in_order())


def _record_decision(unit: GroupUnit, decision: dec.Decision, at: int) -> None:
    """Run the domain command of one placement decision on its group's unit."""
    if isinstance(decision, dec.PlaceGroup):
        scheduling.place_group(unit, decision.assignments, at)
    elif isinstance(decision, dec.HoldCapacity):
        scheduling.hold_capacity(unit, decision.holds, at)
    elif isinstance(decision, dec.PlaceMember):
        scheduling.place_member(unit, decision.member, decision.assignments, at)
    elif isinstance(decision, dec.ReleaseGroup):
        scheduling.release_group(unit, decision.reason, at)
    elif isinstance(decision, dec.SetPendReason):
        scheduling.set_pend_reason(unit, decision.reason, at)
    else:
        raise DomainError(f"unknown decision {type(decision).__name__}")


class _CommandScope:
    """``with controller._command():`` -- a class rather than a generator context
    manager: it wraps every command, and costs a third as much."""

    __slots__ = ("_controller",)

    def __init__(self, controller: Controller) -> None:
        self._controller = controller

    def __enter__(self) -> None:
        controller = self._controller
        controller._lock.acquire()
        try:
            controller._writer.check_running()
        except BaseException:
            controller._lock.release()
            controller._writer.settle()
            raise

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        controller = self._controller
        try:
            controller._lock.release()
        finally:
            controller._writer.settle()
        if exc_type is None:
            controller._snapshot_if_due()
