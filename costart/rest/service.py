"""`costart serve`'s core: the Controller, its views, and the scheduling-session loop.

One `Service` per process. Commands go to the Controller; after each one (and after
every session) the views catch up from their tracked position, so reads (REST, metrics)
never fold the log themselves. The loop runs every ``interval``: a scheduling session
(`Controller.schedule`) when a placement step is attached, the timers
(`Controller.tick`), and the simulated claim driver if enabled.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Final

import structlog

from costart.app import Controller
from costart.display import duration
from costart.domain.actors import TIMER, Actor
from costart.domain.errors import DomainError
from costart.domain.events import NodeStatus
from costart.domain.spec import SpecFormat, parse_spec
from costart.domain.spec_types import GroupSpec
from costart.projections import GroupView, MemberView, Views
from costart.rest.claims import ClaimDriver
from costart.rest.dispatch import Reports
from costart.rest.nodes import Heartbeats
from costart.rest.refresh import SharedRefresh
from costart.rest.watch import Names, WatchHub

log = structlog.get_logger("costart.serve")

SECOND_NS: Final = 10**9
DEFAULT_HEARTBEAT_TIMEOUT_NS: Final = 30 * SECOND_NS


class Service:
    """The controller as a long-running service. Thread-safe: the Controller serializes
    commands with its own lock; the views are caught up by one `SharedRefresh`."""

    def __init__(
        self,
        controller: Controller,
        views: Views,
        *,
        clock: Callable[[], int] = time.time_ns,
        driver: ClaimDriver | None = None,
        heartbeat_timeout_ns: int = DEFAULT_HEARTBEAT_TIMEOUT_NS,
    ) -> None:
        self.controller = controller
        self.views = views
        self.clock = clock
        self.driver = driver
        world = controller.world  # no command runs yet: a consistent picture
        self.watch = WatchHub(controller.read_events, Names(world), world.position)
        self._refresh = SharedRefresh(self._catch_up)
        self.reports = Reports(controller, views, self.refresh)
        self.heartbeats = Heartbeats(heartbeat_timeout_ns)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        # Told each session's wall-clock seconds (the metrics' session histogram).
        self.session_observer: Callable[[float], None] | None = None
        self.refresh()

    def refresh(self) -> None:
        """Fold the log's new events into the views: returns once everything durable
        before the call is in them (one catch-up shared by concurrent callers)."""
        self._refresh.refresh()

    def _catch_up(self) -> None:
        self.views.catch_up(self.controller)
        self.watch.feed()

    # --- commands (the caller has checked who may run them) ----------------------------

    def submit(self, data: bytes, fmt: SpecFormat, actor: Actor | None = None) -> GroupView:
        """Parse, validate and submit a spec document as ``actor`` (default: the spec's
        owner); nothing written on error."""
        return self.submit_spec(parse_spec(data, fmt), actor)

    def submit_spec(self, spec: GroupSpec, actor: Actor | None = None) -> GroupView:
        """Submit a spec the caller parsed already (the REST handler checks its owner)."""
        group = self.controller.submit(spec, actor=actor)
        self.refresh()
        return self.views.group(group.name)

    def cancel(self, name: str, actor: Actor) -> GroupView:
        self.controller.cancel(name, actor=actor)
        self.refresh()
        return self.views.group(name)

    def scale(self, group: str, member: str, replicas: int, actor: Actor) -> MemberView:
        self.controller.scale(f"{group}/{member}", replicas, actor=actor)
        self.refresh()
        return next(m for m in self.views.members(group) if m.name == member)

    def set_node_status(self, node: str, status: NodeStatus, actor: Actor) -> int:
        """Report a node up, drained or down; the events written."""
        written = len(self.controller.set_node_status(node, status, self.clock(), actor=actor))
        self.refresh()
        return written

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
        """One session: place, fire timers, drive claims, then catch the views up."""
        now = self.clock()
        started = time.perf_counter()
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
        self.refresh()

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

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
