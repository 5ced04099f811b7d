"""The discrete-event loop: a virtual clock, a queue of timed items, scheduling sessions,
faults, and the invariant checks after every step.

One step is one queue item (or one session) with every command it causes. Items at the
same time run in the order they were queued (a sequence number breaks ties), and a
session at a time runs after that time's items. Sessions sit on a fixed grid
(``session_interval``) but only run when they can change something: after anything was
written, or when a group's timer (backoff, reservation or barrier deadline) is due — a
session over an unchanged state decides nothing new, so skipping it leaves the log the
same while keeping long traces fast.

The controller is built by an injected factory (`ControllerFactory`); a controller crash
replaces it with one restored from the same log and snapshots, and the restored state is
compared with the state before the crash, byte for byte.

With the ``outside-load`` allocator the engine also plays the host's other work
(`costart.sim.outside_load`): its arrivals and ends are queue items that run whether or
not the controller is up (the host does not wait for costart), each marks the state
dirty (free capacity moved, so a session may now decide something new), and the
overcommit check counts it.
"""

from __future__ import annotations

import gc
import heapq
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from costart.domain import events as ev
from costart.domain import runtime_limits
from costart.domain.actors import Actor
from costart.domain.capacity import Capacity
from costart.domain.errors import SpecError
from costart.domain.events import DomainEvent
from costart.domain.invariants import EventAudit
from costart.domain.spec_types import GroupSpec
from costart.eventlog.codec import canonical_encode, gc_paused
from costart.placement.incremental import IncrementalStep
from costart.sim.checks import FULL_CHECK_EVERY, StepChecker
from costart.sim.errors import SimError
from costart.sim.metrics import GpuUsage
from costart.sim.outside_load import OutsideLoad
from costart.sim.ports import (
    SIM_HOST,
    ControllerFactory,
    FeasibilityCache,
    ReportLike,
    SimController,
    key_of,
)
from costart.sim.setup import SimSetup

if TYPE_CHECKING:
    from costart.sim.embedder import Embedder

INF = 1 << 62
PHASE_RESTORE = 0  # a restore runs before the items deferred to its time
PHASE_ITEM = 1
SNAPSHOT_EVERY = "COSTART_SNAPSHOT_EVERY"
# Events about a member: they may change what it holds, uses or runs.
MEMBER_EVENTS: frozenset[type[DomainEvent]] = frozenset(
    {
        ev.MemberHeld,
        ev.HoldLent,
        ev.MemberPlaced,
        ev.MemberReleased,
        ev.MemberStarted,
        ev.MemberFailed,
        ev.MemberRestarted,
        ev.MemberScaled,
        ev.MemberSucceeded,
        ev.MemberStopped,
    }
)


class Counters:
    """What the run did, for the report."""

    def __init__(self) -> None:
        self.steps = 0
        self.sessions = 0
        self.world_checks = 0
        self.full_checks = 0
        self.events_audited = 0
        self.controller_restarts = 0
        self.restore_checks = 0
        self.node_losses = 0
        self.replans = 0  # sessions planned again after a refused bind
        self.gave_up = 0  # sessions that decided nothing after too many refused binds


class Engine:
    """Runs one policy over one drawn setup. ``embedder`` is the simulated embedding
    controller (it reacts to written events and handles its own queue items)."""

    def __init__(
        self,
        setup: SimSetup,
        embedder: Embedder,
        factory: ControllerFactory,
        *,
        progress: Callable[[Engine], None] | None = None,
    ) -> None:
        self.setup = setup
        self.options = setup.options
        self.now_ns = setup.options.start_ns
        self.counters = Counters()
        self.end_reason = ""
        self._factory = factory
        self._env = {SNAPSHOT_EVERY: str(setup.options.snapshot_every)}
        self._queue: list[tuple[int, int, int, str, tuple[Any, ...]]] = []
        self._seq = 0
        self._position = 0
        self._dirty = True
        first = setup.options.first_session_ns
        interval = setup.options.session_interval_ns
        self._last_session_ns = setup.options.start_ns - 1 if first is None else first - interval
        self._timer_ns: int | None = None
        self._down_until: int | None = None
        self._progress = progress
        cluster = setup.cluster.build()
        self.capacities = cluster.capacities()
        self.usage = GpuUsage(sum(n.gpu for n in cluster.nodes))
        self.usage.last_ns = self.now_ns
        self.audit = EventAudit()
        self.outside: OutsideLoad | None = None
        if setup.outside is not None:
            self.outside = OutsideLoad(cluster, setup.outside, setup.options.seed)
        self._node_names = [node.name for node in cluster.nodes]
        self._node_index = cluster.index
        self.checker = StepChecker(
            self.capacities, self._outside_of if self.outside is not None else None
        )
        self._feasibility: dict[bytes, SpecError | None] = {}
        self.placement = FeasibilityCache(self._step(), self._feasibility)
        self.controller: SimController = self._build(None)
        self.embedder = embedder
        embedder.bind(self)

    # --- the controller --------------------------------------------------------------

    def _clock(self) -> int:
        return self.now_ns

    def _step(self) -> IncrementalStep:
        """A fresh placement step over the run's allocator: the in-memory one, or the
        host's over the other work (which outlives any controller). The incremental
        step: it decides as the plain one, and learns what changed from the events
        the controller commits."""
        if self.outside is None:
            return IncrementalStep.in_memory(self.setup.cluster)
        return IncrementalStep.over_host(self.setup.cluster, self.outside)

    def _count_replans(self) -> None:
        """Move the step's re-plan counts into the run's (a step is replaced on a
        controller restart)."""
        step = self.placement.step
        self.counters.replans += step.replans
        self.counters.gave_up += step.gave_up
        step.replans = step.gave_up = 0

    def _build(self, restart_of: SimController | None) -> SimController:
        """A controller with a fresh placement step over the same cluster: the step reads
        node status from the restored World, so it decides as the old one would."""
        self._count_replans()
        self.placement = FeasibilityCache(self._step(), self._feasibility)
        return self._factory(
            placement=self.placement, clock=self._clock, env=self._env, restart_of=restart_of
        )

    def command(
        self, fn: Callable[..., list[DomainEvent]], *args: Any, **kwargs: Any
    ) -> list[DomainEvent]:
        """Call a controller command; audit, account and react to what it wrote."""
        events = fn(*args, **kwargs)
        self._written(events)
        return events

    def report(self, fn: Callable[..., ReportLike], *args: Any, **kwargs: Any) -> ReportLike:
        """Send a report (`SimController.task_started` ...); audit, account and react to
        what it wrote (nothing, when costart found it repeated or stale)."""
        report = fn(*args, **kwargs)
        self._written(list(report.events))
        return report

    def submit(self, spec: GroupSpec, actor: Actor | None = None) -> list[DomainEvent]:
        """Submit a group (raises `SpecError` if it can never fit); returns its events.
        ``actor``: who submits it (default its owner)."""
        _, events = self.controller.submit_events(spec, actor=actor)
        self._written(events)
        return events

    def _written(self, events: list[DomainEvent]) -> None:
        position = self.controller.world.position
        if position - self._position != len(events):
            raise SimError(f"log moved {position - self._position} but {len(events)} seen")
        self._position = position
        if not events:
            return
        self._dirty = True
        observe = self.audit.observe
        checker = self.checker
        embedder = self.embedder
        members = self.controller.world.members
        text_of = key_of  # bound once: two lookups per event
        for event in events:
            observe(event)
            group_key = text_of(event.group_id)
            if type(event) in MEMBER_EVENTS:
                member_key = text_of(event.originator_id)
                member = members[member_key]
                checker.member_changed(group_key, member_key, member)
                embedder.member_changed(group_key, member_key, member)
            else:
                checker.group_touched(group_key)
                if isinstance(event, ev.GroupSubmitted):
                    embedder.submitted(event)
        self.counters.events_audited += len(events)
        embedder.react(events)

    # --- the queue -------------------------------------------------------------------

    def push(self, at_ns: int, kind: str, *payload: Any) -> None:
        """Queue an item; same-time items run in the order they were pushed."""
        self._seq += 1
        heapq.heappush(self._queue, (max(at_ns, self.now_ns), PHASE_ITEM, self._seq, kind, payload))

    def _next_session_ns(self) -> int:
        if self._down_until is not None:
            return INF
        if self._dirty:
            due = self.now_ns
        elif self._timer_ns is not None:
            due = self._timer_ns
        else:
            return INF
        interval = self.options.session_interval_ns
        start = self.options.start_ns
        grid = start + -(-(due - start) // interval) * interval
        return max(grid, self._last_session_ns + interval)

    def run(self) -> None:
        """Run to quiescence (nothing queued, nothing due) or the horizon.

        The cyclic garbage collector is paused for the run: a run makes next to no
        reference cycles (a test holds it to that), and the collector's passes over
        what the run keeps (the log, the states), again as they grow, would find
        nothing. What the run made then joins the oldest generation without a pass
        over it: `gc.freeze` sets every generation aside at once and `gc.unfreeze`
        hands it all back as the oldest. A process with frozen objects of its own
        keeps its freeze: then the run is left to the collector as usual."""
        if gc.get_freeze_count():
            self._run()
            return
        with gc_paused():
            try:
                self._run()
            finally:
                gc.freeze()
                gc.unfreeze()

    def _run(self) -> None:
        self.embedder.start()
        for i, loss in enumerate(self.setup.faults.node_losses):
            self.push(loss.at_ns, "node_down", i)
        for i, crash in enumerate(self.setup.faults.crashes):
            self.push(crash.at_ns, "crash", i)
        for i, change in enumerate(self.setup.faults.node_changes):
            self.push(change.at_ns, "node_status", i)
        if self.setup.outside is not None:
            for i, work in enumerate(self.setup.outside.arrivals):
                self.push(work.at_ns, "outside_arrive", i)
        horizon = self.options.start_ns + self.options.horizon_ns
        while True:
            item_ns = self._queue[0][0] if self._queue else INF
            session_ns = self._next_session_ns()
            at = min(item_ns, session_ns)
            if at == INF:
                self._end_quiescent(horizon)
                break
            if at > horizon:
                self.end_reason = "horizon"
                self.usage.advance(horizon)
                self.now_ns = horizon
                break
            self.usage.advance(at)
            self.now_ns = at
            if item_ns <= session_ns:
                self._item(heapq.heappop(self._queue))
            else:
                self._session()
            self._after_step()
        self.checker.check_all(self.controller.world)
        self.counters.world_checks = self.checker.checks
        self.counters.full_checks = self.checker.full_checks
        self._count_replans()
        self.usage.sample(self.now_ns)

    def _end_quiescent(self, horizon: int) -> None:
        """Nothing is queued and nothing is due. With no live group left the run is
        done; otherwise the live groups are stuck and would stay so: their state is
        carried to the horizon, so what they hold is counted for the whole run."""
        if self.controller.world.live_names:
            self.end_reason = "stuck"
            self.usage.advance(horizon)
            self.now_ns = horizon
        else:
            self.end_reason = "quiescent"

    def _item(self, entry: tuple[int, int, int, str, tuple[Any, ...]]) -> None:
        _, _, seq, kind, payload = entry
        if kind == "restore":
            self._restore()
        elif kind == "outside_arrive":
            self._outside_arrive(payload[0])
        elif kind == "outside_leave":
            self._outside_moved(self._node_names[self._host().leave(payload[0])])
        elif self._down_until is not None:
            # The controller is down: what happens now reaches it when it is back.
            heapq.heappush(self._queue, (self._down_until, PHASE_ITEM, seq, kind, payload))
        elif kind == "node_down":
            self._node_down(payload[0])
        elif kind == "node_up":
            self.command(self.controller.set_node_status, payload[0], "up", actor=SIM_HOST)
        elif kind == "node_status":
            change = self.setup.faults.node_changes[payload[0]]
            self.command(
                self.controller.set_node_status, change.node, change.status, actor=change.actor
            )
        elif kind == "crash":
            self._crash(payload[0])
        else:
            self.embedder.handle(kind, payload)

    def _session(self) -> None:
        self.counters.sessions += 1
        self._dirty = False
        self._last_session_ns = self.now_ns
        self.command(self.controller.schedule, self.now_ns)
        if self.outside is not None:
            self._races_end_later()
        self.command(self.controller.tick, self.now_ns)
        if not self._dirty:
            self._timer_ns = self._next_timer()
        self.usage.sample(self.now_ns)

    def _next_timer(self) -> int | None:
        """The earliest future backoff end or deadline of a live group (a running
        member's declared run-time limit included)."""
        best: int | None = None
        now = self.now_ns
        groups = self.controller.world.groups
        # A minimum: the live groups' order does not matter, so they are not sorted.
        for key in self.controller.world.live_names.values():
            group = groups[key]
            limit = None
            if (
                group.started_at_ns is not None
                and runtime_limits.shortest_limit_ns(group.spec) is not None
            ):
                limit = runtime_limits.next_runtime_deadline(
                    group, self.controller.world.members_of(group)
                )
            for t in (
                group.retry_at_ns if group.status == "PENDING" else None,
                group.reservation_deadline_ns,
                group.barrier_deadline_ns,
                limit,
            ):
                if t is not None and t > now and (best is None or t < best):
                    best = t
        return best

    # --- the host's other work -------------------------------------------------------

    def _host(self) -> OutsideLoad:
        if self.outside is None:
            raise SimError("the host's other work moved in a run without it")
        return self.outside

    def _outside_of(self, node: str) -> Capacity:
        return self._host().use[self._node_index[node]]

    def _outside_arrive(self, index: int) -> None:
        host = self._host()
        work = host.plan.arrivals[index]
        status = self.controller.world.node_status
        names, used_on = self._node_names, self.checker.used_on
        placed = host.place(
            work,
            lambda i: used_on(names[i]),
            lambda i: status.get(names[i], "up") == "up",
        )
        if placed is not None:
            item, node = placed
            self.push(self.now_ns + work.runtime_ns, "outside_leave", item)
            self._outside_moved(names[node])

    def _races_end_later(self) -> None:
        """Queue the ends of the work that won races in the session just run."""
        host = self._host()
        for item, runtime_ns in host.raced:
            self.push(self.now_ns + runtime_ns, "outside_leave", item)
            self._outside_moved(self._node_names[host.use_node(item)])
        host.raced.clear()

    def _outside_moved(self, node: str) -> None:
        self._dirty = True  # free capacity moved: a session may decide something new
        self.checker.node_touched(node)

    # --- checks ----------------------------------------------------------------------

    def _after_step(self) -> None:
        counters = self.counters
        counters.steps += 1
        if counters.steps % FULL_CHECK_EVERY == 0:
            self.checker.check_all(self.controller.world)
        elif self.checker.pending:
            self.checker.check_step(self.controller.world)
        counters.world_checks = self.checker.checks
        counters.full_checks = self.checker.full_checks
        if self._progress is not None and counters.steps % 2000 == 0:
            self._progress(self)

    # --- faults ----------------------------------------------------------------------

    def _node_down(self, index: int) -> None:
        loss = self.setup.faults.node_losses[index]
        world = self.controller.world
        busy = sorted(
            {
                a.node
                for g in world.live_groups()
                for m in world.members_of(g)
                for a in m.assignments
                if a.node not in world.node_status
            }
        )
        candidates = busy or sorted(n for n in self.capacities if n not in world.node_status)
        if not candidates:
            return
        node = candidates[min(int(loss.pick * len(candidates)), len(candidates) - 1)]
        self.counters.node_losses += 1
        self.command(self.controller.set_node_status, node, "down", actor=SIM_HOST)
        self.push(self.now_ns + loss.down_for_ns, "node_up", node)

    def _crash(self, index: int) -> None:
        crash = self.setup.faults.crashes[index]
        self.counters.controller_restarts += 1
        if crash.down_for_ns <= 0:
            self._restore()
            return
        self._down_until = self.now_ns + crash.down_for_ns
        self._seq += 1
        heapq.heappush(self._queue, (self._down_until, PHASE_RESTORE, self._seq, "restore", ()))

    def _restore(self) -> None:
        old = self.controller
        before = canonical_encode(old.world)
        self.controller = self._build(old)
        if canonical_encode(self.controller.world) != before:
            raise SimError("the restored controller's state differs from the crashed one's")
        self.counters.restore_checks += 1
        self._down_until = None
