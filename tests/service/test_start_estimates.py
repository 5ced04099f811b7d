"""The start estimator (ADR 0136): expected starts made off the command path, over a
World of its own caught up from the log, refreshed after changes, bounded, stale when
late, and never written to the log."""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from costart.bootstrap import Settings, bootstrap
from costart.controller import Controller
from costart.domain.actors import Actor
from costart.placement.shadow import estimate_starts
from costart.projections import Views
from costart.service.controller_service import Service
from costart.service.expected_starts import ExpectedStarts
from costart.service.start_estimates import (
    MIN_DEPTH,
    EstimateSettings,
    StartEstimator,
)
from tests.builders import SECOND_NS, ManualClock, a_group
from tests.service.two_nodes import CLUSTER

T0 = 1_800_000_000 * SECOND_NS  # a wall-clock time: the display shows it as a moment
HOUR_NS = 3600 * SECOND_NS
DEADLINE_S = 20.0
FAST = EstimateSettings(budget_s=0.2, settle_s=0.01, refresh_s=60.0)


def _controller(clock: ManualClock) -> Controller:
    return bootstrap(Settings(cluster=CLUSTER), clock=clock)


def _running_and_waiting(controller: Controller, clock: ManualClock) -> None:
    """ "run" holds both nodes for its declared hour; "wait" needs both."""
    controller.submit(a_group("run").with_member("w", gpu=8, tasks=2, max_runtime="1h").build())
    controller.schedule(clock())
    host = Actor.user("host")
    for task in range(2):
        controller.task_started("run/w", task, 1, actor=host)
    assert controller.group("run").status == "RUNNING"
    controller.submit(a_group("wait").with_member("w", gpu=8, tasks=2).build())
    controller.schedule(clock())


def _poll(
    answer: Callable[[], ExpectedStarts], ok: Callable[[ExpectedStarts], bool]
) -> ExpectedStarts:
    """The first answer ``ok`` accepts, polled until a deadline (no sleep asserts)."""
    deadline = time.monotonic() + DEADLINE_S
    while True:
        found = answer()
        if ok(found):
            return found
        if time.monotonic() > deadline:
            raise AssertionError(f"no answer as wanted before the deadline; last: {found}")
        time.sleep(0.01)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(T0)


def test_a_waiting_group_gets_its_start_from_the_declared_limit_of_what_it_waits_for(clock):
    controller = _controller(clock)
    _running_and_waiting(controller, clock)
    estimator = StartEstimator.for_controller(controller, clock, FAST)
    assert estimator is not None
    clock.advance(600)
    answer = estimator.refresh()
    wait = answer.of("wait")
    assert wait is not None and answer.of("run") is None  # only waiting groups
    assert (wait.start_ns, wait.basis, wait.unplanned) == (T0 + HOUR_NS, "limit", "")
    assert wait.assumption == "rests on the declared limits of the running work it waits for"
    # Where and when it was planned: the log position and controller time.
    assert answer.position == controller.world.position == wait.position
    assert answer.planned_at_ns == wait.planned_at_ns == T0 + 600 * SECOND_NS
    assert not answer.stale and wait.stale_reason is None
    # The same estimate the planner gives over the Controller's own World.
    direct = estimate_starts(controller.placement.cluster, controller.world, clock())
    assert direct["wait"].start_ns == wait.start_ns


def test_the_estimate_refreshes_after_a_state_change_a_burst_planned_once(clock, tmp_path):
    controller = _controller(clock)
    estimator = StartEstimator.for_controller(controller, clock, FAST)
    service = Service(controller, Views(tmp_path / "v"), clock=clock, estimator=estimator)
    try:
        service.start(3600)  # the worker only: sessions are driven here by hand
        _running_and_waiting(controller, clock)
        service.changed()
        first = _poll(service.expected_starts, lambda a: a.of("wait") is not None)
        assert first.of("wait").basis == "limit"
        plannings = estimator.plannings
        # A burst of changes: three more groups wait, each its own command.
        for name in ("w2", "w3", "w4"):
            service.submit_spec(a_group(name).with_member("w", gpu=8, tasks=1).build())
        found = _poll(service.expected_starts, lambda a: a.of("w4") is not None)
        assert [g.group for g in found.groups] == ["wait", "w2", "w3", "w4"]  # queue order
        assert found.position == controller.world.position and not found.stale
        assert estimator.plannings - plannings < 3  # settled: the burst was not planned 3 times
        # The running group ends: the plan moves, and "wait" fits now.
        controller.cancel("run", actor=Actor.user("alice"))
        service.changed()
        moved = _poll(service.expected_starts, lambda a: a.of("wait").basis == "now")
        assert moved.of("wait").start_ns == clock()
    finally:
        service.close()


class Blocking:
    """A planner whose first planning goes through and whose next ones block until
    released (a planning far over its budget)."""

    def __init__(self) -> None:
        self.calls = 0
        self.entered = threading.Event()
        self.release = threading.Event()

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.calls += 1
        if self.calls > 1:
            self.entered.set()
            assert self.release.wait(DEADLINE_S), "never released"
        return estimate_starts(*args, **kwargs)


def test_a_blocked_planning_slows_no_command_and_readers_are_told_it_is_stale(clock, tmp_path):
    controller = _controller(clock)
    _running_and_waiting(controller, clock)
    blocking = Blocking()
    estimator = StartEstimator.for_controller(controller, clock, FAST, plan=blocking)
    assert estimator is not None
    service = Service(controller, Views(tmp_path / "v"), clock=clock, estimator=estimator)
    try:
        service.start(3600)
        first = _poll(service.expected_starts, lambda a: a.of("wait") is not None)
        service.changed()  # the next planning hangs
        assert blocking.entered.wait(DEADLINE_S)  # the worker is inside the planner now
        # Commands go through while it plans: submit, cancel, a session.
        started = time.monotonic()
        service.submit_spec(a_group("later").with_member("w", gpu=8, tasks=1).build())
        controller.schedule(clock())
        service.cancel("later", Actor.user("alice"))
        assert time.monotonic() - started < DEADLINE_S / 4
        assert controller.group("later").status == "CANCELLED"
        # Readers keep the last answer, marked stale once past settle + budget.
        stale = _poll(service.expected_starts, lambda a: a.stale)
        assert stale.position == first.position and stale.of("wait") is not None
        assert stale.of("wait").stale
        assert "newer than the plan: planning has run" in (stale.stale_reason or "")
        assert "over its 200ms budget" in (stale.stale_reason or "")
        blocking.release.set()
        fresh = _poll(
            service.expected_starts,
            lambda a: not a.stale and a.position == controller.world.position,
        )
        assert fresh.of("wait") is not None
    finally:
        blocking.release.set()
        service.close()


def test_a_planning_over_budget_plans_fewer_groups_next_and_says_so(clock):
    controller = _controller(clock)
    _running_and_waiting(controller, clock)
    ticks = iter(range(0, 10_000, 5))  # each monotonic reading 5 s after the last

    def slow_monotonic() -> float:
        return float(next(ticks))

    estimator = StartEstimator(
        _cluster_of(controller),
        _copy(controller),
        controller.read_events,
        clock,
        log_position=lambda: controller.world.position,
        settings=EstimateSettings(budget_s=1.0, settle_s=0.0, depth=40),
        monotonic=slow_monotonic,
    )
    answer = estimator.refresh()
    assert answer.depth == 40 and answer.took_s is not None and answer.took_s > 1.0
    assert estimator.refresh().depth == 20  # halved after the first ran over
    for _ in range(5):
        last = estimator.refresh()
    assert last.depth == MIN_DEPTH
    # Behind the log with no worker to catch up: stale, saying why.
    controller.submit(a_group("more").with_member("w", gpu=8, tasks=1).build())
    said = estimator.answer()
    assert said.stale and said.stale_reason is not None
    assert said.stale_reason.startswith("2 log events newer than the plan")  # submitted, created
    assert "the last planning took 5.0s, over its 1.0s budget" in said.stale_reason


def test_a_failed_planning_keeps_the_last_answer_and_says_it_failed(clock):
    controller = _controller(clock)
    _running_and_waiting(controller, clock)
    calls = []

    def flaky(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        if len(calls) > 1:
            raise RuntimeError("planner broke")
        return estimate_starts(*args, **kwargs)

    estimator = StartEstimator.for_controller(controller, clock, FAST, plan=flaky)
    assert estimator is not None
    estimator.refresh()
    with pytest.raises(RuntimeError):
        estimator.refresh()
    answer = estimator.answer()
    assert (
        answer.stale
        and answer.stale_reason == "the last planning failed (RuntimeError: planner broke)"
    )
    assert answer.of("wait") is not None  # the last good plan is still shown


def test_a_host_without_a_cluster_gets_no_estimator_and_the_service_says_why(clock, tmp_path):
    controller = bootstrap(Settings(cluster=None), clock=clock)
    assert StartEstimator.for_controller(controller, clock) is None
    service = Service(controller, Views(tmp_path / "v"), clock=clock)
    answer = service.expected_starts()
    assert not answer.available and answer.reason == "this server has no cluster to plan on"


def test_bad_settings_are_refused_naming_them(clock):
    controller = _controller(clock)
    with pytest.raises(ValueError, match="budget and refresh must be positive"):
        StartEstimator.for_controller(controller, clock, EstimateSettings(budget_s=0))
    with pytest.raises(ValueError, match="depth and window must be positive"):
        StartEstimator.for_controller(controller, clock, EstimateSettings(depth=0))


def _log_digest(controller: Controller) -> str:
    digest = hashlib.sha256()
    for n in controller.recorder.select_notifications(start=1, limit=100_000):
        digest.update(n.topic.encode())
        digest.update(n.state)
    return digest.hexdigest()


def _story(with_estimates: bool, tmp_path: Path) -> str:
    clock = ManualClock(T0)
    controller = _controller(clock)
    estimator = StartEstimator.for_controller(controller, clock, FAST) if with_estimates else None
    service = Service(controller, Views(tmp_path / "v"), clock=clock, estimator=estimator)
    try:
        if estimator is not None:
            service.start(3600)
        _running_and_waiting(controller, clock)
        service.changed()
        for step in range(3):
            clock.advance(60)
            service.submit_spec(a_group(f"s{step}").with_member("w", gpu=8).build())
            controller.schedule(clock())
            if estimator is not None:
                _poll(service.expected_starts, lambda a: a.of(f"s{step}") is not None)
        return _log_digest(controller)
    finally:
        service.close()


def test_nothing_about_estimates_enters_the_log(tmp_path):
    on = _story(True, tmp_path / "on")
    off = _story(False, tmp_path / "off")
    assert on == off


def _cluster_of(controller: Controller) -> Any:
    from costart.placement.cluster import Cluster

    cluster = controller.placement.cluster  # type: ignore[union-attr]
    return Cluster(cluster.levels, cluster.nodes)


def _copy(controller: Controller) -> Any:
    from costart.domain.state_copy import copy_world

    return copy_world(controller.world)
