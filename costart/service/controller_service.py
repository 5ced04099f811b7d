"""`costart serve`'s core: the Controller, its views, and the scheduling-session loop.

One `Service` per process. Commands go to the Controller and are answered from its
state once durable (`Controller.batch`); the views and a change feed (REST's watch
stream) follow the log in threads of their own (`LogFollower`), and every read of the
views first waits until they hold everything the Controller had decided, and the feed
had sent, when the read began (read your writes; ADR 0050). The loop runs every
``interval``: a scheduling session (`Controller.schedule`) when a placement step is
attached, the timers (`Controller.tick`), and a session driver if one is plugged in
(``serve --simulate-claims``: `costart.adapters.simulated_claims`). Nothing here speaks
HTTP: the feed and the driver come in through the Protocols below (ADR 0054).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Final, Protocol, runtime_checkable

from costart.controller import Controller
from costart.display import duration
from costart.domain.actors import TIMER, Actor
from costart.domain.capacity import Capacity
from costart.domain.errors import Conflict, DomainError
from costart.domain.events import NodeStatus
from costart.domain.spec import SpecFormat, parse_spec
from costart.domain.spec_types import GroupSpec
from costart.log_writer import ControllerStoppedError
from costart.logging_setup import library_logger
from costart.projections import GroupView, MemberView, Views, group_view, member_view
from costart.service.batcher import CommandBatcher
from costart.service.expected_starts import ExpectedStarts, unavailable
from costart.service.heartbeats import Heartbeats
from costart.service.host_reports import Reports
from costart.service.log_follower import LogFollower
from costart.service.outside_load import outside_reports

if TYPE_CHECKING:
    from costart.service.start_estimates import StartEstimator

log = library_logger("costart.serve")

SECOND_NS: Final = 10**9
DEFAULT_HEARTBEAT_TIMEOUT_NS: Final = 30 * SECOND_NS


class ChangeFeed(Protocol):
    """A reader of the log that the service keeps up with it (REST's watch stream).

    `feed` reads whatever the log gained since the last call and returns the position it
    has now read; it is called from one thread at a time. `fed_position` is that
    position: what a client may have seen, so a read of the views waits for it."""

    def feed(self) -> int: ...

    @property
    def fed_position(self) -> int: ...


@runtime_checkable
class DescribesNodes(Protocol):
    """A placement step that says what each node of its cluster offers (ADR 0120)."""

    def node_offer(self, node: str) -> tuple[Capacity, str | None]: ...


class SessionDriver(Protocol):
    """Run after every scheduling session with the controller and the session's time
    (the simulated claim driver); returns how many commands it ran. A `DomainError` it
    raises ends that session early, like one from the step."""

    def step(self, controller: Controller, now_ns: int) -> int: ...


class Service:
    """The controller as a long-running service. Thread-safe: the Controller serializes
    commands with its own lock; the views and the change feed are each caught up by one
    `LogFollower` thread. `close` stops those threads."""

    def __init__(
        self,
        controller: Controller,
        views: Views,
        *,
        watch: ChangeFeed | None = None,
        clock: Callable[[], int] = time.time_ns,
        driver: SessionDriver | None = None,
        heartbeat_timeout_ns: int = DEFAULT_HEARTBEAT_TIMEOUT_NS,
        fold: Callable[[], int] | None = None,
        estimator: StartEstimator | None = None,
    ) -> None:
        """``fold``: folds the log's new events into the views elsewhere and returns
        their position (`ViewsProcess.catch_up`); by default the follower thread folds.
        ``estimator``: makes the waiting groups' expected starts off the command path
        (`costart.service.start_estimates`); told of every change, run by `start`."""
        self.controller = controller
        self.estimator = estimator
        self._fold = fold
        self.clock = clock
        self.driver = driver
        self.watch = watch
        self._views = views
        views.catch_up(controller)
        self._feed: LogFollower | None = None
        if watch is not None:
            watch.feed()
            self._feed = LogFollower(watch.feed, watch.fed_position, pause_s=0, name="watch")
        self._follower = LogFollower(
            self._catch_up, views.position(), check=self._check_running, name="views"
        )
        self.reports = Reports(controller, lambda: self.views, self.changed)
        self.commands = CommandBatcher(controller, on_batch=self.changed)
        self.heartbeats = Heartbeats(heartbeat_timeout_ns)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        # Told each session's wall-clock seconds (the metrics' session histogram).
        self.session_observer: Callable[[float], None] | None = None

    @property
    def views(self) -> Views:
        """The views, once they hold everything the Controller had decided (and the watch
        stream had sent) when this was read: read your writes. Waits for them (bounded);
        raises if they cannot get there (`LogFollower.wait_for`)."""
        self.refresh()
        return self._views

    def views_at(self, position: int) -> Views:
        """The views once they hold everything up to log ``position`` (a position the
        caller has seen, e.g. on the watch stream): a reader that follows the stream
        need not wait for what was decided after it (bounded, as `views`)."""
        self._follower.wait_for(min(position, self.controller.world.position))
        return self._views

    def refresh(self) -> None:
        """Return once the views hold everything decided before the call."""
        needed = self.controller.world.position
        if self.watch is not None:
            needed = max(needed, self.watch.fed_position)
        self._follower.wait_for(needed)

    def changed(self) -> None:
        """The log gained events: the watch stream sends them now, the views fold them
        soon (at once if a read waits)."""
        if self._feed is not None:
            self._feed.poke()
        self._follower.poke()
        if self.estimator is not None:
            self.estimator.changed()

    def expected_starts(self) -> ExpectedStarts:
        """The waiting groups' expected starts as last planned, with their freshness
        (never plans in the caller's thread)."""
        if self.estimator is None:
            return unavailable("this server has no cluster to plan on")
        return self.estimator.answer()

    def close(self) -> None:
        """Stop the scheduling loop and the follower threads."""
        self.stop()
        if self.estimator is not None:
            self.estimator.close()
        self.commands.close()
        self._follower.stop()
        if self._feed is not None:
            self._feed.stop()

    def _check_running(self) -> None:
        stopped = self.controller.stopped
        if stopped is not None:
            raise ControllerStoppedError(f"the controller stopped: {stopped}") from stopped

    def _catch_up(self) -> int:
        if self._fold is not None:
            return self._fold()
        self._views.catch_up(self.controller)
        return self._views.position()

    # --- commands (the caller has checked who may run them) ----------------------------

    def submit(self, data: bytes, fmt: SpecFormat, actor: Actor | None = None) -> GroupView:
        """Parse, validate and submit a spec document as ``actor`` (default: the spec's
        owner); nothing written on error."""
        return self.submit_spec(parse_spec(data, fmt), actor)

    def submit_spec(self, spec: GroupSpec, actor: Actor | None = None) -> GroupView:
        """Submit a spec the caller parsed already (the REST handler checks its owner);
        the group's row as the views will show it, once durable."""
        with self.controller.batch():
            row = self._submitted(spec, actor)
        self.changed()
        return row

    async def submit_batched(self, check: Callable[[], GroupSpec], actor: Actor) -> GroupView:
        """`submit_spec` from the event loop, batched with the submits in flight (`CommandBatcher`):
        ``check`` parses and checks the spec (outside the Controller's lock)."""
        return await self.commands.run(check, lambda spec: self._submitted(spec, actor))

    def _submitted(self, spec: GroupSpec, actor: Actor | None) -> GroupView:
        """Submit inside `Controller.batch`; the group's row right after the submit."""
        controller = self.controller
        group, written = controller.submit_events(spec, actor=actor)
        return group_view(group, controller.world.members_of(group), written[-1].at_ns)

    def cancel(self, name: str, actor: Actor) -> GroupView:
        controller = self.controller
        with controller.batch():
            written = controller.cancel(name, actor=actor)
            if written:
                group = controller.world.group_by_id(written[-1].group_id)
                members = controller.world.members_of(group)
                row = group_view(group, members, written[-1].at_ns)
        self.changed()
        return row if written else self.views.group(name)

    def scale(self, group: str, member: str, replicas: int, actor: Actor) -> MemberView:
        controller = self.controller
        with controller.batch():
            controller.scale(f"{group}/{member}", replicas, actor=actor)
            state = controller.world.group_named(group)
            found = controller.world.member_named(state, member)
            row = member_view(state, found, state.member_ids.index(found.id))
        self.changed()
        return row

    def set_node_status(
        self, node: str, status: NodeStatus, actor: Actor, note: str | None = None
    ) -> int:
        """Report a node up, drained or down (``note``: why, in the event); the events
        written."""
        written = len(
            self.controller.set_node_status(node, status, self.clock(), actor=actor, note=note)
        )
        self.changed()
        return written

    def node_offer(self, node: str) -> tuple[Capacity, str | None, NodeStatus]:
        """What ``node`` offers in this server's cluster view, its GPU type and status
        (`NotFound` for a node it does not have; `Conflict` when its placement step does
        not describe its nodes)."""
        placement = self.controller.placement
        if not isinstance(placement, DescribesNodes):
            raise Conflict("this server's placement does not describe its nodes")
        capacity, gpu_type = placement.node_offer(node)
        return capacity, gpu_type, self.controller.world.node_status.get(node, "up")

    def report_outside_load(self, node: str, use: Capacity, source: str, actor: Actor) -> None:
        """The host's other work on ``node`` (its agent's count, ``source``): placement
        counts it from the next session on (`costart.service.outside_load`)."""
        if self.controller.placement is not None:
            self.controller.placement.check_node(node)
        reports = outside_reports(self.controller)
        if reports.reported(node) != use:
            log.info(
                "outside load", node=node, gpu=use.gpu, cpu=use.cpu, mem_gb=use.mem_gb,
                source=source, by=str(actor),
            )  # fmt: skip
        reports.report(node, use, source)

    def heartbeat(self, node: str, actor: Actor) -> int:
        """An agent's heartbeat; a node marked down by silence comes back up."""
        if self.controller.placement is not None:
            self.controller.placement.check_node(node)
        if self.heartbeats.beat(node, self.clock()):
            return self.set_node_status(node, "up", actor)
        return 0

    def _mark_silent_nodes_down(self, now_ns: int) -> None:
        for node in self.heartbeats.overdue(now_ns):
            log.warning(
                "node down: no heartbeat",
                node=node,
                timeout_s=self.heartbeats.timeout_ns / SECOND_NS,
            )
            # costart's own timer: the agent fell silent; the event says so.
            note = f"no heartbeat for {duration(self.heartbeats.timeout_ns)}"
            self.controller.set_node_status(node, "down", now_ns, actor=TIMER, note=note)

    # --- the scheduling-session loop ----------------------------------------------------

    def step(self) -> None:
        """One session: place, fire timers, run the session driver, then tell the followers."""
        now = self.clock()
        started = time.perf_counter()
        before = self.controller.world.position
        try:
            if self.controller.placement is not None:
                self.controller.schedule(now)
            self.controller.tick(now)
            self._mark_silent_nodes_down(now)
            if self.driver is not None:
                self.driver.step(self.controller, now)
        except DomainError as error:
            # A decision that no longer fits (state moved under it) is retried next session.
            log.warning("scheduling session stopped early", error=str(error))
        if self.session_observer is not None:
            self.session_observer(time.perf_counter() - started)
        if self.controller.world.position != before:
            self.changed()

    def start(self, interval_s: float) -> None:
        if interval_s <= 0:
            raise ValueError("the session interval must be positive")

        def loop() -> None:
            while not self._stop.wait(interval_s):
                try:
                    self.step()
                except Exception:  # the loop must outlive one bad session
                    log.exception("scheduling session failed")

        self._thread = threading.Thread(target=loop, name="costart-sessions", daemon=True)
        self._thread.start()
        if self.estimator is not None:
            self.estimator.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
