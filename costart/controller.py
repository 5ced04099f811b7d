"""The Controller: the co-start application the embedding cluster controller calls.

Commands load a `GroupUnit` (copies of the group's aggregates), run a domain command on
it, append all its events as one atomic write (through `costart.log_writer.LogWriter`),
and only then fold them into the live `World`. A command that raises changes nothing. On
a store that queues writes the fold happens before the write is durable and the command
is acknowledged after it; a failed write stops the controller (`ControllerStoppedError`)
and a new one restores from the log (ADR 0011). The log — store, restore, snapshots,
fencing — is the Controller's `costart.log_session.LogSession`; time comes from an
injected clock (integer nanoseconds). Entry points build a Controller through
`costart.bootstrap`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from types import TracebackType
from typing import Any, NamedTuple, Protocol

from eventsourcing.persistence import ApplicationRecorder

from costart.deadline_index import DeadlineIndex
from costart.domain import backfill, lifecycle, limits, node_loss, reconcile, reports, scheduling
from costart.domain import decisions as dec
from costart.domain.actors import TIMER, Actor
from costart.domain.aggregates import GroupUnit
from costart.domain.cluster_stream import ClusterUnit
from costart.domain.errors import DomainError, NotFound
from costart.domain.events import DomainEvent, NodeStatus
from costart.domain.reconcile import HostTask, HostView
from costart.domain.reports import Outcome
from costart.domain.spec import SpecFormat, parse_spec
from costart.domain.spec_types import FailureReason, GroupSpec
from costart.domain.states import GroupState, MemberState
from costart.domain.world import World
from costart.eventlog.rollback import LastKnown
from costart.log_session import LogSession
from costart.logging_setup import library_logger

log = library_logger("costart.controller")

Clock = Callable[[], int]


class ReportResult(NamedTuple):
    """What a report from the host did: ``outcome`` "applied" (``events`` it wrote),
    "repeated" or "stale" (nothing written; ``detail`` says why)."""

    outcome: Outcome
    detail: str
    events: tuple[DomainEvent, ...]


class Reconciled(NamedTuple):
    """What `Controller.reconcile` did: the ``events`` it wrote, and the host's tasks
    costart does not keep (``host_must_stop``: unknown, ended, or running before their
    group's barrier)."""

    events: tuple[DomainEvent, ...]
    host_must_stop: tuple[HostTask, ...]


class PlacementStep(Protocol):
    """The co-placement step as the Controller sees it (built in `costart.placement`)."""

    def check_feasible(self, spec: GroupSpec) -> None:
        """Raise `SpecError` naming the member if the group can never fit the cluster."""

    def decide(self, world: World, now_ns: int) -> list[dec.Decision]:
        """One scheduling session's decisions, from a read-only view of the state."""

    def committed(self, events: Sequence[DomainEvent], position: int) -> None:
        """The Controller folded ``events`` into its World, now at log ``position``
        (how an incremental step learns what changed; the plain one ignores it)."""

    def check_node(self, node: str) -> None:
        """Raise `DomainError` if the cluster has no such node."""


def split_member_ref(ref: str) -> tuple[str, str]:
    """``"group/member"`` -> (group, member), with a clear error otherwise."""
    group, sep, member = ref.partition("/")
    if not sep or not group or not member or "/" in member:
        raise NotFound(f"bad member reference {ref!r}: expected 'GROUP/MEMBER'")
    return group, member


class Controller:
    """Co-start groups over an event-sourced log: commands, host reports, timers,
    reconcile and queries. The log itself — opening it, restoring the state, snapshots,
    fencing — is the `LogSession` the Controller is given (`costart.bootstrap` builds it).

    ``clock`` returns the controller time in integer nanoseconds; it is read once per
    command and never goes backwards in the log (a smaller reading is raised to the last
    recorded time).
    """

    def __init__(
        self,
        env: Mapping[str, str] | None = None,
        clock: Clock | None = None,
        placement: PlacementStep | None = None,
        restart_of: Controller | None = None,
        *,
        session: LogSession | None = None,
    ) -> None:
        """``session``: the log this controller commands over, opened (and fenced) by
        `costart.bootstrap`. Without one the controller opens a plain session itself on
        ``env`` (in memory unless it names a store), or over the same log and snapshots
        as the crashed ``restart_of`` — the short form tests and old fixtures use; a
        lease epoch, host term, warm state or expectations need a `LogSession` built
        with them."""
        if session is None:
            session = LogSession(
                env, restart_of=restart_of.session if restart_of is not None else None
            )
        elif env is not None or restart_of is not None:
            raise ValueError("session: give an opened session, or env/restart_of, not both")
        self.session: LogSession = session
        self._writer = session.writer
        self._clock: Clock = clock or time.time_ns
        self.placement = placement
        # Which groups a tick fires for, from the committed events (ADR 0062).
        self._deadlines = DeadlineIndex()
        self._lock = threading.RLock()
        self._depth = threading.local()  # command scopes this thread has open
        self.world: World = session.world

    # --- the log, as the embedding contract reaches it -------------------------------
    # Thin, each kept for a caller outside: `last_known` and `close` for the host (the
    # README's embedding example), `snapshot_now` for `costart snapshot` and the server's
    # stop, `epoch` and `stopped` for the server and the service layer, and `recorder`
    # with `read_events` because the Controller is the `EventSource` the views, the watch
    # stream and the simulator follow. Everything else of the log is `self.session`.

    @property
    def recorder(self) -> ApplicationRecorder:
        """The log's recorder (the session's)."""
        return self.session.recorder

    def read_events(
        self, after: int = 0, until: int | None = None
    ) -> Iterator[tuple[int, DomainEvent]]:
        """Events at log positions ``after < p <= until``, in log order."""
        return self.session.read_events(after, until)

    @property
    def epoch(self) -> int | None:
        """The lease epoch this controller writes under (None: no lease)."""
        return self.session.epoch

    @property
    def stopped(self) -> BaseException | None:
        """Why this controller stopped (a failed or fenced write), or None if running."""
        return self._writer.stopped

    def last_known(self) -> LastKnown:
        """What the host keeps of this log after an acknowledged command, to give back to
        `bootstrap` on the next start (ADR 0048): the durable position, the log's chain
        hash there and the host term (if any) this controller writes under."""
        with self._lock:
            return self.session.last_known()

    def snapshot_now(self) -> int:
        """Write a snapshot of the whole state at the current position; returns it."""
        with self._lock:
            return self.session.snapshot_now()

    def close(self) -> None:
        """Close the log (the store's files or connections)."""
        self.session.close()

    # --- the command path ------------------------------------------------------------

    def _now(self, at_ns: int | None = None) -> int:
        reading = self._clock() if at_ns is None else at_ns
        return max(reading, self.world.clock_ns)

    def _unit(self, name: str, actor: Actor | None = None) -> GroupUnit:
        group = self.world.group_named(name)
        return GroupUnit(group, self.world.members_of(group), actor=actor)

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
        self._deadlines.committed(events, world.position)
        if self.placement is not None:
            self.placement.committed(events, world.position)
        return events

    def _command(self) -> _CommandScope:
        """One or more commands: decided and queued under the lock, acknowledged after
        it (so concurrent commands share one fsync), then a snapshot if one is due."""
        return _CommandScope(self)

    def batch(self) -> _CommandScope:
        """``with controller.batch():`` -- the commands in the block run under one hold
        of the lock, so nothing else changes the state between them and what the block
        reads of ``world`` (a command's result, as a caller shows it) is the state right
        after them; they are acknowledged together when the block ends, returning once
        all are durable (one shared fsync). A command that raises inside changes
        nothing, and the others stay recorded. Only the block's end settles: a command
        inside returns before its events are durable."""
        return _CommandScope(self)

    def _on_group(
        self, name: str, command: Callable[[GroupUnit, int], Any], actor: Actor
    ) -> list[DomainEvent]:
        with self._command():
            unit = self._unit(name, actor)
            command(unit, self._now())
            return self._commit(unit)

    # --- commands --------------------------------------------------------------------

    def submit(self, spec: GroupSpec, *, actor: Actor | None = None) -> GroupState:
        """Admit a validated spec, sent by ``actor`` (default: the spec's owner). Raises
        `Conflict` if a live group has its name, or `SpecError` if the placement step
        says it can never fit the cluster."""
        group, _ = self.submit_events(spec, actor=actor)
        return group

    def submit_events(
        self, spec: GroupSpec, *, actor: Actor | None = None
    ) -> tuple[GroupState, list[DomainEvent]]:
        """`submit`, also returning the events it wrote (in log order)."""
        if self.placement is not None:
            self.placement.check_feasible(spec)
        sender = actor if actor is not None else Actor.user(spec.owner)
        with self._command():
            unit = lifecycle.submit(self.world, spec, self._now(), sender)
            written = self._commit(unit)
            group = self.world.group_by_id(unit.id)
        log.info("group submitted", group=spec.name, members=len(spec.members), actor=str(sender))
        return group, written

    def submit_document(
        self, data: bytes | str, fmt: SpecFormat, *, actor: Actor | None = None
    ) -> GroupState:
        """Parse, validate and submit a TOML or JSON spec (nothing written on error)."""
        return self.submit(parse_spec(data, fmt), actor=actor)

    def cancel(self, name: str, *, actor: Actor) -> list[DomainEvent]:
        """Tear the group down from any live state; ``actor`` is who asked."""
        return self._on_group(name, lifecycle.cancel, actor)

    def scale(self, member: str, replicas: int, *, actor: Actor) -> list[DomainEvent]:
        """Set a replica set's desired replicas (``"GROUP/MEMBER"``)."""
        group, name = split_member_ref(member)
        return self._on_group(
            group, lambda u, at: lifecycle.scale_member(u, name, replicas, at), actor
        )

    # --- reports from the host (docs/design.md §8): attempt-stamped, idempotent ----------------

    def task_started(
        self, member: str, task: int, attempt: int, *, actor: Actor, key: str | None = None
    ) -> ReportResult:
        """Task ``task`` of ``member`` (``"GROUP/MEMBER"``), placed by the member's
        placement ``attempt``, started. A repeated or late report writes nothing and says
        so (`ReportResult.outcome`); a start before `may_start` raises `IllegalTransition`."""
        return self._report(
            member, actor, key, lambda u, m, at: reports.task_started(u, m, task, attempt, key, at)
        )

    def task_succeeded(
        self, member: str, task: int, attempt: int, *, actor: Actor, key: str | None = None
    ) -> ReportResult:
        """Task ``task`` of a job's ``attempt`` exited 0. The job succeeds when every one
        of its tasks has; then the group's success policy applies."""
        return self._report(
            member,
            actor,
            key,
            lambda u, m, at: reports.task_succeeded(u, m, task, attempt, key, at),
        )

    def task_failed(
        self,
        member: str,
        task: int,
        attempt: int,
        reason: FailureReason,
        *,
        exit_code: int | None = None,
        actor: Actor,
        key: str | None = None,
        note: str | None = None,
    ) -> ReportResult:
        """Task ``task`` of ``attempt`` failed (``reason``: error, oom, node-lost,
        preempted, claim-failed; ``exit_code`` if it exited; ``note``: why, in words, when
        the reason does not say it all). The group's failure policy decides: one task's
        failure is a job's failure; a replica set loses the replica."""
        return self._report(
            member,
            actor,
            key,
            lambda u, m, at: reports.task_failed(u, m, task, attempt, reason, exit_code, key, at),
            note,
        )

    def claim_ready(
        self,
        member: str,
        claim: str,
        attempt: int,
        *,
        task: int | None = None,
        actor: Actor,
        key: str | None = None,
    ) -> ReportResult:
        """Claim ``claim`` of the member's placement ``attempt`` is READY (``task``: the
        claim is that task's own, one of the spec's ``task_claims``); the gang's last one
        releases the barrier, and a task starts only once its own claims are READY."""
        return self._report(
            member,
            actor,
            key,
            lambda u, m, at: reports.claim_ready(u, m, claim, attempt, key, at, task),
        )

    def claim_failed(
        self,
        member: str,
        claim: str,
        attempt: int,
        reason: str,
        *,
        task: int | None = None,
        actor: Actor,
        key: str | None = None,
    ) -> ReportResult:
        """Claim ``claim`` of the member's placement ``attempt`` (``task``: that task's
        own) failed (``reason``: free text); before the start the whole group is released
        and retried, after it the failure policy decides."""
        return self._report(
            member,
            actor,
            key,
            lambda u, m, at: reports.claim_failed(u, m, claim, attempt, reason, key, at, task),
        )

    def _report(
        self,
        member: str,
        actor: Actor,
        key: str | None,
        decide: Callable[[GroupUnit, str, int], reports.Verdict],
        note: str | None = None,
    ) -> ReportResult:
        group, name = split_member_ref(member)
        reports.check_key(key)
        if note is not None and (len(note) > limits.MAX_REASON_TEXT or not note.isprintable()):
            raise DomainError(
                f"note: printable text of at most {limits.MAX_REASON_TEXT} characters"
            )
        with self._command():
            unit = self._unit(group, actor)
            if note is not None:
                unit.set_note(note)
            verdict = decide(unit, name, self._now())
            written = self._commit(unit)
        if not verdict.applied:
            log.info(
                "report changed nothing",
                member=member,
                outcome=verdict.outcome,
                detail=verdict.detail,
                actor=str(actor),
            )
        return ReportResult(verdict.outcome, verdict.detail, tuple(written))

    def tick(self, now_ns: int | None = None) -> list[DomainEvent]:
        """Fire due timers (reservation and barrier deadlines) at ``now_ns``."""
        fired: list[DomainEvent] = []
        with self._command():
            now = self._now(now_ns)
            # Only the due groups, in submission order (`scheduling.due_groups`, answered
            # from what changed): firing one group's timers never changes another group.
            for group in self._deadlines.due(self.world, now):
                unit = GroupUnit(group, self.world.members_of(group), actor=TIMER)
                if scheduling.on_tick(unit, now):
                    fired.extend(self._commit(unit))
        return fired

    def set_node_status(
        self,
        node: str,
        status: NodeStatus,
        now_ns: int | None = None,
        *,
        actor: Actor,
        note: str | None = None,
    ) -> list[DomainEvent]:
        """``actor``'s report of a node. ``down`` turns into the loss of everything on it
        (release before the start, ``node-lost`` failures after it); ``drained`` only
        stops new placements. One atomic append for all of it."""
        if self.placement is not None:
            self.placement.check_node(node)
        with self._command():
            at = self._now(now_ns)
            cluster = ClusterUnit(self.world, actor)
            if not cluster.report(self.world.node_status.get(node, "up"), node, status, at, note):
                return []
            units: list[GroupUnit | ClusterUnit] = [cluster]
            if status == "down":
                for group in self.world.live_groups():
                    unit = GroupUnit(group, self.world.members_of(group), actor=actor)
                    unit.set_note(note)
                    if node_loss.lose_node(unit, node, at):
                        units.append(unit)
            written = self._commit(*units)
        log.info("node status", node=node, status=status, events=len(written))
        return written

    def reconcile(self, host: HostView, *, actor: Actor) -> Reconciled:
        """Bring costart's state to the host's (``host``: which tasks exist and run
        where, which nodes are up or down, replica counts it set) after a divergence —
        a job cancelled in the host's own tools, a node lost while costart was down.
        Writes the events that get there, each noting why (``reconciled: ...``), group by
        group; returns them and the host's tasks costart does not keep (the host should
        stop those). A second call with the same view writes nothing."""
        written: list[DomainEvent] = []
        for node, status in sorted(host.nodes.items()):
            if self.world.node_status.get(node, "up") != status:
                written += self.set_node_status(
                    node, status, actor=actor, note=f"reconciled: {status} on the host"
                )
        stop: list[reconcile.HostTask] = []
        with self._command():
            at = self._now()
            down = frozenset(n for n, s in self.world.node_status.items() if s == "down")
            known: set[str] = set()
            for group in self.world.live_groups():
                known.add(group.name)
                unit = GroupUnit(group, self.world.members_of(group), actor=actor)
                tasks = host.by_task(group.name)
                replicas = {
                    ref.split("/", 1)[1]: n
                    for ref, n in host.replicas.items()
                    if ref.startswith(f"{group.name}/")
                }
                reconcile.reconcile_group(unit, tasks, replicas, down, at)
                written += self._commit(unit)
                stop += reconcile.must_stop(unit, tasks)
            stop += [t for t in host.tasks if t.member.split("/", 1)[0] not in known]
        log.info("reconciled", events=len(written), host_must_stop=len(stop), actor=str(actor))
        stop.sort(key=lambda t: (t.member, t.task))
        return Reconciled(tuple(written), tuple(stop))

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
    elif isinstance(decision, dec.LendHolds):
        backfill.lend_holds(unit, decision.holds, decision.borrower, at)
    elif isinstance(decision, dec.PlaceBorrower):
        backfill.place_borrower(
            unit,
            decision.assignments,
            decision.lender,
            at,
            until_ns=decision.admitted_until_ns,
            estimates=decision.estimates,
        )
    elif isinstance(decision, dec.Preempt):
        backfill.preempt(unit, decision.nodes, decision.lender, at)
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
        depth = controller._depth
        depth.n = getattr(depth, "n", 0) + 1
        try:
            controller._writer.check_running()
        except BaseException as error:
            self.__exit__(type(error), error, error.__traceback__)
            raise

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        controller = self._controller
        depth = controller._depth
        depth.n -= 1
        if depth.n:
            # Inside an outer scope (`Controller.batch`): it acknowledges everything.
            controller._lock.release()
            return
        try:
            controller._lock.release()
        finally:
            controller._writer.settle()
        if exc_type is None and controller.session.snapshot_due():
            controller.snapshot_now()
