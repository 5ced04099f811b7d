"""Every waiting group's expected start, made off the command path (issue 36, ADR 0136).

`StartEstimator` plans the queue forward with the shadow-time planner
(`costart.placement.shadow.estimate_starts`) over a World of its own: a copy of the
Controller's taken once (under the Controller's lock, before it plans anything), then
caught up by reading the log (`Controller.read_events`), as the watch stream is. So
planning never holds the Controller's lock and never reads a World a command is
changing; every answer names the log position and the controller time it was planned
at.

In `costart serve` a worker thread re-plans after the state changes: `changed` (called
by the service after each command and session) only marks the answer behind and wakes
the worker, which waits ``settle_s`` so a burst of changes is planned once, plans, and
then rests at least as long as the planning took (planning takes at most half of one
core). Without changes it re-plans every ``refresh_s`` (time passing moves the plan).
A planning that runs over ``budget_s`` still publishes (it is the newest answer), but
halves the depth planned next (groups beyond it are said to be beyond the groups
planned) until planning fits the budget again; meanwhile readers get the last answer
marked stale once it is behind the log for longer than ``settle_s + budget_s``. The
embedded library calls `refresh` itself (docs/embedding.md). Nothing here is logged:
the answers live in memory only.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Final, NamedTuple, Protocol

from costart.display import duration, rfc3339
from costart.display.expected_start import assumption_text
from costart.domain.events import DomainEvent
from costart.domain.spec_types import Topology
from costart.domain.state_copy import copy_world
from costart.domain.world import World
from costart.logging_setup import library_logger
from costart.placement.cluster import Cluster
from costart.placement.shadow import (
    DEFAULT_DEPTH,
    DEFAULT_WINDOW_NS,
    StartEstimate,
    estimate_starts,
)
from costart.service.expected_starts import ExpectedStart, ExpectedStarts

if TYPE_CHECKING:
    from costart.controller import Controller

log = library_logger("costart.estimates")

MIN_DEPTH: Final = 8
"""The fewest groups a planning over budget shrinks to (the head of the queue)."""
READ_CHUNK: Final = 10_000


class PlanStarts(Protocol):
    """How the estimator plans (`estimate_starts`; a test hands a slow or blocking one)."""

    def __call__(
        self,
        cluster: Cluster,
        world: World,
        now_ns: int,
        *,
        placement_groups: Mapping[str, Topology] | None = ...,
        depth: int = ...,
        window_ns: int = ...,
    ) -> dict[str, StartEstimate]: ...


class PlansOnACluster(Protocol):
    """A placement step with a cluster to plan on (`costart.placement.CoPlacementStep`)."""

    @property
    def cluster(self) -> Cluster: ...

    placement_groups: Mapping[str, Topology]


ReadEvents = Callable[[int, int | None], Iterator[tuple[int, DomainEvent]]]


class EstimateSettings(NamedTuple):
    """How the estimator is bounded and refreshed (ADR 0136)."""

    budget_s: float = 1.0
    """A planning should take at most this; over it, the next one plans fewer groups."""
    settle_s: float = 0.25
    """Wait this long after a change before planning, so a burst is planned once."""
    refresh_s: float = 30.0
    """Re-plan this often without a change (time passing moves the plan)."""
    depth: int = DEFAULT_DEPTH
    """The most waiting groups planned (the planner's depth)."""
    window_ns: int = DEFAULT_WINDOW_NS
    """How far ahead starts are planned."""


class _Plan(NamedTuple):
    """One published planning."""

    position: int
    now_ns: int
    took_s: float
    depth: int
    estimates: dict[str, StartEstimate]


class StartEstimator:
    """Expected starts over a World of its own (see the module). Thread-safe: `changed`
    and `answer` never wait for a planning; `refresh` plans now, one at a time."""

    def __init__(
        self,
        cluster: Cluster,
        world: World,
        read_events: ReadEvents,
        clock: Callable[[], int],
        *,
        log_position: Callable[[], int],
        placement_groups: Callable[[], Mapping[str, Topology]] = dict,
        settings: EstimateSettings = EstimateSettings(),  # noqa: B008 (immutable)
        plan: PlanStarts = estimate_starts,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        """``world``: this estimator's own copy (`copy_world`), at its ``position``;
        ``read_events``: the log after a position; ``log_position``: the position the
        Controller has reached; ``cluster``: a Cluster this estimator alone marks up and
        down (built from the step's nodes)."""
        if settings.budget_s <= 0 or settings.settle_s < 0 or settings.refresh_s <= 0:
            raise ValueError("estimates: budget and refresh must be positive, settle not negative")
        if settings.depth < 1 or settings.window_ns <= 0:
            raise ValueError("estimates: depth and window must be positive")
        self.settings = settings
        self._cluster = cluster
        self._world = world
        self._read_events = read_events
        self._clock = clock
        self._log_position = log_position
        self._placement_groups = placement_groups
        self._plan_starts = plan
        self._monotonic = monotonic
        self._depth = settings.depth
        self._one_at_a_time = threading.Lock()
        self._cond = threading.Condition()
        self._published: _Plan | None = None
        self._failure: str | None = None
        self._behind_since: float | None = None  # a change no planning has begun on
        self._planning_since: float | None = None  # when the running planning began
        self._covers_since: float | None = None  # the oldest change the running one covers
        self._last_end: float | None = None
        self._last_took = 0.0
        self._stop = False
        self._thread: threading.Thread | None = None
        self.plannings = 0  # how many plannings ran (tests: a burst is planned once)
        # Told (position, planned_at_ns) after each published plan, outside every lock:
        # the watch stream's hint (`costart.rest.watch.WatchHub.hint`).
        self.on_publish: Callable[[int, int], None] | None = None

    @classmethod
    def for_controller(
        cls,
        controller: Controller,
        clock: Callable[[], int] | None = None,
        settings: EstimateSettings = EstimateSettings(),  # noqa: B008 (immutable)
        plan: PlanStarts = estimate_starts,
    ) -> StartEstimator | None:
        """An estimator over ``controller``'s log and placement step's cluster; None when
        the step has no cluster to plan on (a host that places by hand). Copies the
        World once, under the Controller's lock."""
        step = controller.placement
        if step is None or not isinstance(getattr(step, "cluster", None), Cluster):
            return None
        on: PlansOnACluster = step  # type: ignore[assignment]
        cluster = Cluster(on.cluster.levels, on.cluster.nodes)
        with controller.batch():
            world = copy_world(controller.world)
        return cls(
            cluster,
            world,
            controller.read_events,
            clock if clock is not None else time.time_ns,
            log_position=lambda: controller.world.position,
            placement_groups=lambda: dict(getattr(on, "placement_groups", {})),
            settings=settings,
            plan=plan,
        )

    # --- the command path's side: O(1), never waits for a planning ---------------------

    def changed(self) -> None:
        """The log gained events: plan again soon (a burst of calls, once)."""
        with self._cond:
            if self._behind_since is None:
                self._behind_since = self._monotonic()
            self._cond.notify()

    # --- planning ------------------------------------------------------------------------

    def refresh(self) -> ExpectedStarts:
        """Catch this estimator's World up with the log, plan, publish; the answer. Runs
        in the caller's thread, never holding the Controller's lock."""
        with self._one_at_a_time:
            with self._cond:
                started = self._monotonic()
                self._planning_since = started
                self._covers_since = self._behind_since
                self._behind_since = None
            try:
                plan = self._plan_now(started)
            except Exception as error:
                with self._cond:
                    self._failure = f"{type(error).__name__}: {error}"
                    self._planning_since = None
                    self._behind_since = self._behind_since or self._covers_since or started
                raise
            with self._cond:
                self._published = plan
                self._failure = None
                self._planning_since = None
                self._covers_since = None
                self._last_end = self._monotonic()
                self._last_took = plan.took_s
                self.plannings += 1
        if self.on_publish is not None:
            try:
                self.on_publish(plan.position, plan.now_ns)
            except Exception:  # a listener's failure is not the plan's
                log.exception("start estimates: a listener failed")
        return self.answer()

    def _plan_now(self, started: float) -> _Plan:
        world = self._world
        # The log in chunks: a large gap is read without holding every event at once.
        while True:
            before = world.position
            for position, event in self._read_events(before, before + READ_CHUNK):
                world.apply(event)
                world.position = position
            if world.position == before:
                break
        self._cluster.sync_status(world.node_status)
        now_ns = max(self._clock(), world.clock_ns)
        depth = self._depth
        estimates = self._plan_starts(
            self._cluster,
            world,
            now_ns,
            placement_groups=self._placement_groups(),
            depth=depth,
            window_ns=self.settings.window_ns,
        )
        took = self._monotonic() - started
        self._adapt_depth(took)
        return _Plan(world.position, now_ns, took, depth, estimates)

    def _adapt_depth(self, took_s: float) -> None:
        """Over budget: plan half as many next time; well under it: back toward the
        configured depth."""
        budget = self.settings.budget_s
        if took_s > budget and self._depth > MIN_DEPTH:
            self._depth = max(MIN_DEPTH, self._depth // 2)
            log.warning(
                "start estimates over budget: planning fewer groups",
                took_s=round(took_s, 3), budget_s=budget, depth=self._depth,
            )  # fmt: skip
        elif took_s < budget / 4 and self._depth < self.settings.depth:
            self._depth = min(self.settings.depth, self._depth * 2)

    # --- the worker ------------------------------------------------------------------

    def start(self) -> None:
        """Plan in a thread of its own from now on (idempotent)."""
        with self._cond:
            if self._thread is not None:
                return
            self._thread = threading.Thread(
                target=self._loop, name="costart-estimates", daemon=True
            )
            self._thread.start()

    def close(self, timeout_s: float = 10.0) -> None:
        """Stop the worker (a planning under way finishes first, up to ``timeout_s``)."""
        with self._cond:
            self._stop = True
            self._cond.notify()
            thread = self._thread
        if thread is not None:
            thread.join(timeout_s)

    def _next_due(self, now: float) -> float:
        """When the worker plans next (monotonic seconds)."""
        settings = self.settings
        if self._last_end is None:
            return now  # nothing planned yet
        rested = self._last_end + self._last_took  # planning takes at most half the time
        if self._behind_since is not None:
            return max(self._behind_since + settings.settle_s, rested)
        return max(self._last_end + settings.refresh_s, rested)

    def _loop(self) -> None:
        while True:
            with self._cond:
                while not self._stop:
                    now = self._monotonic()
                    due = self._next_due(now)
                    if due <= now:
                        break
                    self._cond.wait(due - now)
                if self._stop:
                    return
            try:
                self.refresh()
            except Exception:  # the worker outlives one bad planning; readers see it stale
                log.exception("start estimates failed")
                with self._cond:
                    self._last_end = self._monotonic()

    # --- readers -----------------------------------------------------------------------

    def answer(self) -> ExpectedStarts:
        """The last published plan with its freshness: stale when the log moved past it
        and no newer plan came within ``settle_s + budget_s`` of the change (at once,
        without a worker: call `refresh`), or the last planning failed."""
        settings = self.settings
        log_position = self._log_position()
        with self._cond:
            plan, failure = self._published, self._failure
            now = self._monotonic()
            planning_for = None if self._planning_since is None else now - self._planning_since
            pending = [t for t in (self._behind_since, self._covers_since) if t is not None]
            waited = now - min(pending) if pending else None
            worker = self._thread is not None
            depth = self._depth
        over = ""
        if planning_for is not None and planning_for > settings.budget_s:
            over = f"planning has run {_secs(planning_for)}, over its {_secs(settings.budget_s)} budget"
        elif plan is not None and plan.took_s > settings.budget_s:
            over = f"the last planning took {_secs(plan.took_s)}, over its {_secs(settings.budget_s)} budget"
        if plan is None:
            stale = f"the planning failed ({failure})" if failure is not None else over or None
            return ExpectedStarts(
                available=True, reason=stale or "not planned yet", log_position=log_position,
                budget_s=settings.budget_s, depth=depth, window_ns=settings.window_ns,
                stale=stale is not None, stale_reason=stale,
            )  # fmt: skip
        reason: str | None = None
        behind = log_position - plan.position
        overdue = waited is not None and waited > settings.settle_s + settings.budget_s
        if failure is not None:
            reason = f"the last planning failed ({failure})"
        elif behind > 0 and (overdue or not worker):
            reason = f"{behind} log event{'s' if behind != 1 else ''} newer than the plan"
            reason += f": {over}" if over else ""
        groups = tuple(
            _expected(e, plan, settings.window_ns, reason) for e in plan.estimates.values()
        )
        return ExpectedStarts(
            available=True,
            position=plan.position,
            log_position=log_position,
            planned_at_ns=plan.now_ns,
            planned_at=rfc3339(plan.now_ns),
            took_s=round(plan.took_s, 6),
            budget_s=settings.budget_s,
            depth=plan.depth,
            window_ns=settings.window_ns,
            stale=reason is not None,
            stale_reason=reason,
            groups=groups,
        )


def _secs(seconds: float | None) -> str:
    return duration(int((seconds or 0.0) * 1e9))


def _text(ns: int | None) -> str | None:
    return None if ns is None else rfc3339(ns)


def _expected(
    estimate: StartEstimate, plan: _Plan, window_ns: int, stale_reason: str | None
) -> ExpectedStart:
    return ExpectedStart(
        group=estimate.name,
        start_ns=estimate.start_ns,
        start=_text(estimate.start_ns),
        earliest_ns=estimate.earliest_ns,
        earliest=_text(estimate.earliest_ns),
        latest_ns=estimate.latest_ns,
        latest=_text(estimate.latest_ns),
        basis=estimate.basis,
        unplanned=estimate.unplanned,
        assumption=assumption_text(estimate.basis, estimate.unplanned, plan.depth, window_ns),
        depth=plan.depth,
        window_ns=window_ns,
        position=plan.position,
        planned_at_ns=plan.now_ns,
        planned_at=rfc3339(plan.now_ns),
        stale=stale_reason is not None,
        stale_reason=stale_reason,
    )
