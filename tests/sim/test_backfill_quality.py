"""Backfill into held capacity in the simulator (ADR 0045): the scheduling benchmark's
issue-21 targets at one seed (`make bench` runs 20), and a short run whose log holds
lending and preemption, replays the same for the same seed and passes every check."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec

from costart.cli.sim_cmd import controller_factory
from costart.domain import events as ev
from costart.eventlog.event_reading import log_records
from costart.sim.quality import RunFigures
from costart.sim.results import BACKFILL_POLICY, run_policy
from costart.sim.scenario import parse_scenario
from costart.sim.setup import SimSetup, draw_setup
from tests.sim.helpers import SCENARIOS, run
from tests.sim.test_scheduling_quality import _bench


def test_backfill_starts_gangs_as_soon_as_reserve_with_a_fraction_of_its_idle_holds(
    tmp_path: Path,
) -> None:
    out = tmp_path / "scheduling.json"
    # Plain reserve: the same workload with nothing declared (nothing lent or stopped);
    # the second run finds it in the results file.
    plain = ["--seeds", "1", "--workloads", "starvation", "--policies", "reserve"]
    _bench().main([*plain, "--out", str(out)])
    policies = f"atomic,reserve,{BACKFILL_POLICY}"
    args = ["--seeds", "1", "--workloads", "starvation-backfill", "--policies", policies]
    _bench().main([*args, "--out", str(out)])
    entry = json.loads(out.read_bytes())["workloads"]["starvation-backfill"]
    targets = entry["targets"]
    assert targets["plain_reserve"] == "sim-starvation.toml"
    assert targets["gang_p99_at_most_reserve"]["met"], targets
    assert targets["idle_held_at_most_25pct_of_reserve"]["met"], targets
    # Measured, not met (ADR 0046): the gangs run while the stream goes on, so some
    # small jobs queue behind running gang work (not behind holds); it is reported.
    assert targets["small_p50_within_10pct_of_atomic"]["ratio"] is not None
    backfill = entry["summary"][BACKFILL_POLICY]
    assert backfill["gang_never_started"]["high"] == 0


def _short_setup(seed: int, max_runtime: str = "4h30m") -> SimSetup:
    """The starvation-backfill workload, cut to two hours of the stream and one gang."""
    text = (SCENARIOS / "sim-starvation-backfill.toml").read_text()
    text = text.replace('max_runtime = "4h30m"', f'max_runtime = "{max_runtime}"')
    text = text.replace("count = 700", "count = 200").replace("count = 3", "count = 1")
    text = text.replace('horizon = "12h"', 'horizon = "5h"')
    return draw_setup(parse_scenario(text.encode(), SCENARIOS), seed)


def test_a_short_backfill_run_lends_preempts_checks_and_replays_the_same() -> None:
    first = run(_short_setup(3), BACKFILL_POLICY)
    again = run(_short_setup(3), BACKFILL_POLICY)
    assert first.log_sha256 == again.log_sha256
    assert first.invariant_checks > 0 and first.events_audited == first.log_events
    assert first.never_started == 0 and first.deadlocked == 0


def _logged(setup: SimSetup, policy: str) -> list[ev.DomainEvent]:
    _, engine = run_policy(setup, policy, controller_factory)
    mapper = engine.controller.session.mapper
    return [mapper.to_domain_event(r) for r in log_records(engine.controller.recorder)]


def test_the_log_of_a_backfill_run_records_loans_and_preemptions() -> None:
    events = _logged(_short_setup(3), BACKFILL_POLICY)
    notes = [e.note or "" for e in events]
    assert any(isinstance(e, ev.HoldLent) for e in events) or any(
        n.startswith("on loan from reservation") for n in notes
    )
    preempted = [e for e in events if isinstance(e, ev.MemberFailed) and e.reason == "preempted"]
    assert preempted and all(e.action == "restart-group" for e in preempted)
    restarts = [e for e in events if isinstance(e, ev.GroupRestarted)]
    assert restarts and all(e.restarts == 0 for e in restarts)  # never a budget


def test_the_simulator_stops_a_job_at_its_declared_limit() -> None:
    # Limits shorter than many runs (log-normal, 45 minutes median): the engine wakes at
    # each limit and the controller's tick stops the job there, not a moment later.
    events = _logged(_short_setup(5, max_runtime="40m"), "atomic")
    started = {e.originator_id: e.at_ns for e in events if isinstance(e, ev.MemberStarted)}
    stopped = [e for e in events if isinstance(e, ev.MemberFailed) and e.reason == "max-runtime"]
    assert len(stopped) > 10
    assert all(e.at_ns - started[e.originator_id] == 40 * 60 * 10**9 for e in stopped)


def test_the_benchmark_summarises_runs_of_other_seeds_recorded_before() -> None:
    def figures(seed: int, gang_p99: float) -> RunFigures:
        return RunFigures(seed, 1, 1, 0, 0, 1.0, gang_p99, 1.0, 1.0, 0.0, 0.0, 0.5, "quiescent")

    fresh = {"atomic": [figures(2, 20.0)]}
    recorded = {"atomic": [msgspec.to_builtins(figures(s, 99.0)) for s in (1, 2, 3)]}
    merged = _bench().with_runs_of_other_seeds(fresh, recorded)["atomic"]
    assert [(r.seed, r.gang_time_to_start_p99_s) for r in merged] == [
        (1, 99.0),
        (2, 20.0),
        (3, 99.0),
    ]


def test_a_run_of_some_policies_keeps_the_recorded_runs_of_the_others() -> None:
    def figures(seed: int) -> RunFigures:
        return RunFigures(seed, 1, 1, 0, 0, 1.0, 2.0, 1.0, 1.0, 0.0, 0.0, 0.5, "quiescent")

    recorded = {"atomic": [msgspec.to_builtins(figures(1))]}
    merged = _bench().with_runs_of_other_seeds({"volcano": [figures(1)]}, recorded)
    assert sorted(merged) == ["atomic", "volcano"]
