"""A simulated run's log, read after the fact, gives the figures `costart sim` reported
for that run: the log is fed to the simulator's own accounting (ADR 0134)."""

from __future__ import annotations

import os

import msgspec
import pytest

from costart.bootstrap import Settings, sim_controller_factory
from costart.cli.sim_cmd import controller_factory
from costart.controller import Controller
from costart.eventlog.backends import open_replay_log
from costart.replay.outcomes.accounting import read_figures, run_figures
from costart.replay.outcomes.figures import LogFigures
from costart.replay.source import RecorderSource
from costart.sim.engine import Engine
from costart.sim.results import BACKFILL_POLICY, PLAN_AHEAD_POLICY, PolicyResult, run_policy
from costart.sim.setup import SimSetup
from tests.sim.helpers import setup_of
from tests.sim.test_backfill_quality import _short_setup

COSTART_POLICIES = ("atomic", "reserve", BACKFILL_POLICY, PLAN_AHEAD_POLICY)
# Every figure both reports hold, compared field by field.
SHARED = sorted(
    (set(PolicyResult.__struct_fields__) & set(LogFigures.__struct_fields__)) - {"timeline"}
)


def _without_crashes(setup: SimSetup) -> SimSetup:
    """The setup with no controller crash: an arrival while the controller is down is
    submitted (and so logged) only when it is back (see the crash test below)."""
    return msgspec.structs.replace(setup, faults=msgspec.structs.replace(setup.faults, crashes=()))


def _log_figures(engine: Engine, setup: SimSetup) -> LogFigures:
    source = RecorderSource(engine.controller.recorder)
    return read_figures(
        source, setup.cluster.build(), label="log", start_ns=0, end_ns=engine.now_ns
    )


def _differences(result: PolicyResult, figures: LogFigures) -> dict[str, tuple[object, object]]:
    return {
        name: (getattr(result, name), getattr(figures, name))
        for name in SHARED
        if getattr(result, name) != getattr(figures, name)
    }


def test_the_shared_figures_are_the_ones_that_matter() -> None:
    for name in (
        "time_to_start_p50_s",
        "time_to_start_p99_s",
        "idle_held_gpu_hours",
        "partial_start_waste_gpu_hours",
        "thrown_away_gpu_hours",
        "wasted_gpu_hours",
        "busy_gpu_hours",
        "utilization",
        "deadlocked",
        "deadlocked_groups",
        "censored_waits",
        "restarts",
    ):
        assert name in SHARED


@pytest.mark.parametrize("scenario", ["rl-post-training", "deadlock-trap"])
@pytest.mark.parametrize("policy", COSTART_POLICIES)
def test_a_sim_logs_figures_equal_the_sims_report(scenario: str, policy: str) -> None:
    setup = _without_crashes(setup_of(scenario, 1))
    result, engine = run_policy(setup, policy, controller_factory)
    figures = _log_figures(engine, setup)
    assert _differences(result, figures) == {}
    if scenario == "rl-post-training":  # failures, restarts and held reservations
        assert figures.thrown_away_gpu_hours > 0 and figures.idle_held_gpu_hours > 0
    assert figures.groups == result.groups > 0
    # The run's own originals give every group the same fate (the timelines are sampled
    # at different moments: the run's at its sessions, the log's at its events).
    own = msgspec.structs.replace(run_figures(engine, "log"), timeline=figures.timeline)
    assert msgspec.json.encode(own) == msgspec.json.encode(figures)


def test_a_sim_log_written_to_lmdb_and_opened_read_only_gives_the_sims_report(tmp_path) -> None:
    setup = _without_crashes(setup_of("rl-post-training", 1))
    factory = sim_controller_factory(Settings(store=str(tmp_path / "store"), cluster=None))
    result, engine = run_policy(setup, "reserve", factory)
    assert isinstance(engine.controller, Controller)
    engine.controller.close()
    with open_replay_log(str(tmp_path / "store"), os.environ) as log:
        figures = read_figures(
            log.source, setup.cluster.build(), label="lmdb", start_ns=0, end_ns=engine.now_ns
        )
    assert _differences(result, figures) == {}


def test_a_group_arriving_while_the_controller_is_down_waits_from_its_submission() -> None:
    # Seed 1 of this scenario crashes the controller for 2 minutes while one group
    # arrives: the simulator counts its wait from the arrival, the log knows it from its
    # submission when the controller is back — nothing earlier is in any log.
    setup = setup_of("streaming-pipeline", 1)
    (crash,) = setup.faults.crashes
    result, engine = run_policy(setup, "reserve", controller_factory)
    figures = _log_figures(engine, setup)
    late = {
        o.name: o.at_ns
        for o in engine.embedder.originals
        if crash.at_ns <= o.at_ns < crash.at_ns + crash.down_for_ns
    }
    assert list(late) == ["clicks-002"]
    fate = next(f for f in figures.fates if f.name == "clicks-002")
    assert fate.submitted_ns == crash.at_ns + crash.down_for_ns
    assert fate.submitted_ns - late["clicks-002"] > 0
    differences = _differences(result, figures)
    assert set(differences) <= {"time_to_start_p50_s", "time_to_start_p90_s", "time_to_start_p99_s"}
    assert differences  # this run's p99 is that group's wait


@pytest.mark.parametrize(
    ("seed", "max_runtime", "policy", "counted"),
    [
        (3, "4h30m", BACKFILL_POLICY, "preemptions"),  # loans taken back: group restarts
        (5, "40m", "atomic", "limit_kills"),  # runs stopped at their declared limit
    ],
)
def test_stops_restarts_and_a_run_cut_at_its_horizon_are_read_alike(
    seed: int, max_runtime: str, policy: str, counted: str
) -> None:
    setup = _short_setup(seed, max_runtime)
    result, engine = run_policy(setup, policy, controller_factory)
    figures = _log_figures(engine, setup)
    assert _differences(result, figures) == {}
    assert getattr(figures, counted) > 0 and figures.thrown_away_gpu_hours > 0
    assert result.end_reason == "horizon" or result.restarts > 0
