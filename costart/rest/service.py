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

import structlog

from costart.app import Controller
from costart.domain.actors import Actor
from costart.domain.errors import DomainError
from costart.domain.spec import SpecFormat
from costart.projections import GroupView, Views
from costart.rest.claims import ClaimDriver

log = structlog.get_logger("costart.serve")


class Service:
    """The controller as a long-running service. Thread-safe: the Controller serializes
    commands with its own lock; the views are caught up under ``_views_lock``."""

    def __init__(
        self,
        controller: Controller,
        views: Views,
        *,
        clock: Callable[[], int] = time.time_ns,
        driver: ClaimDriver | None = None,
    ) -> None:
        self.controller = controller
        self.views = views
        self.clock = clock
        self.driver = driver
        self._views_lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        # Told each session's wall-clock seconds (the metrics' session histogram).
        self.session_observer: Callable[[float], None] | None = None
        self.refresh()

    def refresh(self) -> None:
        """Fold the log's new events into the views."""
        with self._views_lock:
            self.views.catch_up(self.controller)

    # --- commands (the caller has checked who may run them) ----------------------------

    def submit(self, data: bytes, fmt: SpecFormat, actor: Actor | None = None) -> GroupView:
        """Submit a spec document as ``actor`` (default: the spec's owner)."""
        group = self.controller.submit_document(data, fmt, actor=actor)
        self.refresh()
        return self.views.group(group.name)

    def cancel(self, name: str, actor: Actor) -> GroupView:
        self.controller.cancel(name, actor=actor)
        self.refresh()
        return self.views.group(name)

    # --- the scheduling-session loop ----------------------------------------------------

    def step(self) -> None:
        """One session: place, fire timers, drive claims, then catch the views up."""
        now = self.clock()
        started = time.perf_counter()
        try:
            if self.controller.placement is not None:
                self.controller.schedule(now)
            self.controller.tick(now)
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
