"""A log made by hand, command by command at chosen times, and its figures checked
against numbers worked out by hand from those times."""

from __future__ import annotations

import os

import msgspec
import pytest

from costart.bootstrap import Settings, bootstrap
from costart.controller import Controller
from costart.eventlog.backends import open_replay_log
from costart.placement.cluster import Cluster, Node
from costart.replay.outcomes.accounting import read_figures
from costart.replay.outcomes.figures import LogFigures
from costart.replay.source import RecorderSource
from tests.builders import (
    ManualClock,
    a_group,
    fail,
    full_placement,
    new_controller,
    ready,
    start,
    succeed,
)
from tests.pg_support import fresh_schema

T0 = 1_800_000_000 * 10**9  # a wall-clock time (2027-01-15)
S = 10**9
HOUR_S = 3600
CAPACITY = 6 * 8


def _cluster() -> Cluster:
    names = ["r1-n001", "r1-n002", "r2-n001", "r3-n001", "r4-n001", "r5-n001"]
    return Cluster(("rack",), [Node(n, (n.split("-")[0],), gpu=8) for n in names])


def _log() -> RecorderSource:
    """train: 2 x 8 GPUs, submitted at 0, placed at 60 s, claims ready (barrier released)
    at 90 s, started at 120 s, succeeded an hour later (3720 s).
    flaky: 1 x 4 GPUs, submitted at 20 s, placed at 30 s, ready and started at 40 s,
    failed at 640 s (the group fails: its 600 s run is thrown away).
    half: 1 x 8 GPUs, submitted at 5 s, placed at 100 s, its claim never ready: it holds
    8 GPUs idle to the end (deadlocked, by the simulator's count).
    stuck: 1 x 8 GPUs, submitted at 10 s, never placed."""
    clock = ManualClock(T0)
    c = new_controller(clock)
    _write(c, clock)
    return RecorderSource(c.recorder)


def _write(c: Controller, clock: ManualClock) -> None:
    """The commands of `_log`, at their times."""
    train = a_group("train").with_member("w", gpu=8, tasks=2, claims=("gpus",)).build()
    flaky = a_group("flaky").with_member("w", gpu=4, tasks=1, claims=("gpus",)).build()
    half = a_group("half").with_member("w", gpu=8, tasks=1, claims=("gpus",)).build()
    stuck = a_group("stuck").with_member("w", gpu=8, tasks=1).build()

    def at(seconds: int) -> None:
        clock.now_ns = T0 + seconds * S

    c.submit(train)
    at(5)
    c.submit(half)
    at(10)
    c.submit(stuck)
    at(20)
    c.submit(flaky)
    at(30)
    c.apply_decisions([full_placement(flaky, rack="r2")])
    at(40)
    ready(c, "flaky/w", "gpus")
    start(c, "flaky/w")
    at(60)
    c.apply_decisions([full_placement(train, rack="r1")])
    at(90)
    ready(c, "train/w", "gpus")
    at(100)
    c.apply_decisions([full_placement(half, rack="r3")])
    at(120)
    start(c, "train/w")
    at(640)
    fail(c, "flaky/w", "error", exit_code=1)
    at(120 + HOUR_S)
    succeed(c, "train/w")


@pytest.fixture(scope="module")
def figures() -> LogFigures:
    return read_figures(_log(), _cluster(), label="hand-made")


def _hours(gpu_seconds: int) -> float:
    return round(gpu_seconds / 3600, 4)


def test_the_window_is_the_logs_first_to_last_event(figures: LogFigures) -> None:
    assert figures.window.start_ns == T0
    assert figures.window.end_ns == T0 + (120 + HOUR_S) * S
    assert figures.capacity_gpus == CAPACITY


def test_times_to_start_count_to_the_barrier_and_censor_what_never_started(
    figures: LogFigures,
) -> None:
    fates = {f.name: f for f in figures.fates}
    assert (fates["train"].wait_s, fates["flaky"].wait_s) == (90.0, 20.0)
    assert fates["stuck"].censored and fates["stuck"].wait_s == 3720 - 10
    assert fates["half"].censored and fates["half"].wait_s == 3720 - 5
    # Waits 20, 90, 3710, 3715: nearest rank p50 is the 2nd, p90 and p99 the 4th.
    assert figures.time_to_start_p50_s == 90.0
    assert figures.time_to_start_p90_s == figures.time_to_start_p99_s == 3715.0
    assert (figures.started, figures.never_started, figures.censored_waits) == (2, 2, 2)


def test_wasted_hours_split_into_idle_held_partial_start_and_thrown_away(
    figures: LogFigures,
) -> None:
    # idle-held: train 16 GPUs placed 60 s -> started 120 s; flaky 4 GPUs 30 s -> 40 s;
    # half 8 GPUs from 100 s to the end (3720 s).
    idle = 16 * 60 + 4 * 10 + 8 * (3720 - 100)
    thrown = 4 * 600  # flaky's run, 40 s -> 640 s, ended in its group's failure
    assert figures.idle_held_gpu_hours == _hours(idle)
    assert figures.partial_start_waste_gpu_hours == 0.0  # the barrier came first
    assert figures.thrown_away_gpu_hours == _hours(thrown)
    assert figures.wasted_gpu_hours == _hours(idle + thrown)
    fates = {f.name: f for f in figures.fates}
    assert fates["train"].idle_held_gpu_hours == _hours(16 * 60)
    assert fates["flaky"].thrown_away_gpu_hours == _hours(thrown)
    assert fates["half"].wasted_gpu_hours == _hours(8 * 3620)
    assert fates["stuck"].wasted_gpu_hours == 0.0


def test_utilization_is_busy_over_capacity_times_the_window(figures: LogFigures) -> None:
    busy = 16 * HOUR_S + 4 * 600  # train's hour, flaky's run (thrown away, but it ran)
    assert figures.busy_gpu_hours == _hours(busy)
    assert figures.capacity_gpu_hours == _hours(CAPACITY * 3720)
    assert figures.utilization == round(busy / (CAPACITY * 3720), 4)


def test_each_groups_fate_and_the_deadlock_count(figures: LogFigures) -> None:
    ends = {f.name: (f.end, f.started_ns) for f in figures.fates}
    assert ends == {
        "train": ("succeeded", T0 + 90 * S),
        "flaky": ("failed", T0 + 40 * S),
        "half": ("deadlocked", None),
        "stuck": ("waiting", None),
    }
    assert [f.name for f in figures.fates] == ["train", "half", "stuck", "flaky"]
    assert (figures.deadlocked, figures.deadlocked_groups) == (1, ["half"])
    assert (figures.succeeded, figures.failed, figures.cancelled) == (1, 1, 0)


def test_a_shorter_window_reads_the_log_only_up_to_its_end() -> None:
    # To 600 s: train is running (started at 90 s), flaky is still running, its run not
    # yet thrown away; capacity counts 600 s.
    figures = read_figures(_log(), _cluster(), label="early", end_ns=T0 + 600 * S)
    ends = {f.name: f.end for f in figures.fates}
    assert ends == {
        "train": "running",
        "flaky": "running",
        "half": "deadlocked",
        "stuck": "waiting",
    }
    assert figures.thrown_away_gpu_hours == 0.0
    assert figures.busy_gpu_hours == _hours(16 * (600 - 120) + 4 * (600 - 40))
    assert figures.capacity_gpu_hours == _hours(CAPACITY * 600)


def test_a_log_placed_on_another_clusters_nodes_is_refused_naming_the_node() -> None:
    small = Cluster(("rack",), [Node("r1-n001", ("r1",), gpu=8)])
    with pytest.raises(ValueError, match=r"'r2-n001'.*give the cluster it ran on"):
        read_figures(_log(), small, label="x")


def test_an_empty_log_or_a_window_ending_before_it_starts_is_refused() -> None:
    with pytest.raises(ValueError, match="no events"):
        read_figures(_log(), _cluster(), label="x", end_ns=T0 - 1)
    with pytest.raises(ValueError, match=r"ends .* before it starts"):
        read_figures(_log(), _cluster(), label="x", start_ns=T0 + 10 * S, end_ns=T0 + 5 * S)
    # Capacity counted from after the first event would count less time than was used.
    with pytest.raises(ValueError, match=r"starts \(2027-01-15T08:00:01Z\) after the log's first"):
        read_figures(_log(), _cluster(), label="x", start_ns=T0 + S)


def test_a_postgresql_log_gives_the_same_figures(pg_url: str, figures: LogFigures) -> None:
    with fresh_schema(pg_url) as url:
        clock = ManualClock(T0)
        controller = bootstrap(Settings(store=url, cluster=None), clock=clock)
        try:
            _write(controller, clock)
        finally:
            controller.close()
        with open_replay_log(url, os.environ) as log:
            from_pg = read_figures(log.source, _cluster(), label="hand-made")
    assert msgspec.json.encode(from_pg) == msgspec.json.encode(figures)


def test_a_group_restart_throws_away_what_its_succeeded_members_ran() -> None:
    """retry: members a and b (2 GPUs each), placed at 10 s, ready and started at 20 s; a
    succeeds at 620 s, b fails at 1020 s and the group restarts: b's 1000 s and a's
    600 s, both on 2 GPUs, must run again."""
    clock = ManualClock(T0)
    c = new_controller(clock)
    spec = (
        a_group("retry")
        .with_member("a", gpu=2, tasks=1, claims=("gpus",))
        .with_member("b", gpu=2, tasks=1, claims=("gpus",))
        .with_rule("restart-group", members=("b",), max_restarts=3)
        .build()
    )
    c.submit(spec)
    clock.now_ns = T0 + 10 * S
    c.apply_decisions([full_placement(spec, rack="r1")])
    clock.now_ns = T0 + 20 * S
    for member in ("a", "b"):
        ready(c, f"retry/{member}", "gpus")
    for member in ("a", "b"):
        start(c, f"retry/{member}")
    clock.now_ns = T0 + 620 * S
    succeed(c, "retry/a")
    clock.now_ns = T0 + 1020 * S
    fail(c, "retry/b", "error", exit_code=1)
    assert c.group("retry").attempt == 2
    nodes = Cluster(("rack",), [Node(f"r1-n00{i}", ("r1",), gpu=8) for i in (1, 2)])
    figures = read_figures(RecorderSource(c.recorder), nodes, label="retry")
    assert figures.thrown_away_gpu_hours == _hours(2 * 1000 + 2 * 600)
    assert figures.busy_gpu_hours == _hours(2 * 1000 + 2 * 600)
    assert figures.idle_held_gpu_hours == _hours(4 * 10)
    (fate,) = figures.fates
    assert (fate.restarts, fate.end, fate.wait_s) == (1, "running", 20.0)
