"""Scheduling quality over many seeds: what `bench/bench_scheduling.py` measures.

Per run, per workload (a scenario's ``[[workloads]]``, a trace's size class): time to
start (p50, p99) and wasted GPU-hours in its three parts. Then pooled over the run, the
groups split into *gangs* (more than one task to start together) and *small jobs* (one
task): time to start at p50 and p99. A group that never started counts with the time it
waited until the run ended (a lower bound: a gang that starves must not vanish from the
percentile that shows it starving), and the count of such censored waits is given
beside. Groups that would have arrived after the run ended are left out, counted apart.
Per run also: idle-held, partial-start and thrown-away GPU-hours (their sum: wasted),
restarts, preemptions, limit kills and utilisation. Across seeds each figure is
summarised by its median and its range.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterable, Sequence

import msgspec

from costart.sim.breakdown import WorkloadFigures, took_part, waits_of
from costart.sim.engine import Engine
from costart.sim.metrics import percentile
from costart.sim.ports import ControllerFactory
from costart.sim.results import PolicyResult, run_policy
from costart.sim.setup import SimSetup

NS_PER_SECOND = 10**9


class WorkloadRun(msgspec.Struct, frozen=True):
    """One workload under one policy over one seed (seconds, GPU-hours); the waits
    behind the percentiles include ``never_started`` censored ones."""

    workload: str
    groups: int
    never_started: int
    time_to_start_p50_s: float | None
    time_to_start_p99_s: float | None
    idle_held_gpu_hours: float
    partial_start_gpu_hours: float
    thrown_away_gpu_hours: float
    wasted_gpu_hours: float
    restarts: int
    failed: int

    @classmethod
    def of(cls, w: WorkloadFigures) -> WorkloadRun:
        return cls(
            workload=w.workload,
            groups=w.groups,
            never_started=w.never_started,
            time_to_start_p50_s=_round(w.time_to_start_p50_s),
            time_to_start_p99_s=_round(w.time_to_start_p99_s),
            idle_held_gpu_hours=round(w.idle_held_gpu_hours, 2),
            partial_start_gpu_hours=round(w.partial_start_waste_gpu_hours, 2),
            thrown_away_gpu_hours=round(w.thrown_away_gpu_hours, 2),
            wasted_gpu_hours=round(w.wasted_gpu_hours, 2),
            restarts=w.restarts,
            failed=w.failed,
        )


def _round(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds, 1)


class RunFigures(msgspec.Struct, frozen=True):
    """One policy over one seed (seconds, GPU-hours): per workload, then pooled."""

    seed: int
    gangs: int
    small_jobs: int
    gang_never_started: int
    small_never_started: int
    gang_time_to_start_p50_s: float | None
    gang_time_to_start_p99_s: float | None
    small_time_to_start_p50_s: float | None
    small_time_to_start_p99_s: float | None
    idle_held_gpu_hours: float
    partial_start_gpu_hours: float
    utilization: float
    end_reason: str
    thrown_away_gpu_hours: float = 0.0
    wasted_gpu_hours: float = 0.0
    restarts: int = 0
    preemptions: int = 0
    limit_kills: int = 0
    failed: int = 0
    after_horizon: int = 0
    workloads: list[WorkloadRun] = msgspec.field(default_factory=list)
    # Busy time that led somewhere (busy minus thrown away) over capacity; None in runs
    # recorded before it was measured.
    useful_utilization: float | None = None


class Spread(msgspec.Struct, frozen=True):
    """A figure over seeds: the median and the range (None: no seed had a value)."""

    median: float | None
    low: float | None
    high: float | None


SUMMARISED = (
    "gang_time_to_start_p50_s",
    "gang_time_to_start_p99_s",
    "small_time_to_start_p50_s",
    "small_time_to_start_p99_s",
    "idle_held_gpu_hours",
    "partial_start_gpu_hours",
    "thrown_away_gpu_hours",
    "wasted_gpu_hours",
    "restarts",
    "preemptions",
    "limit_kills",
    "failed",
    "utilization",
    "useful_utilization",
    "gang_never_started",
    "small_never_started",
    "after_horizon",
)
WORKLOAD_SUMMARISED = (
    "time_to_start_p50_s",
    "time_to_start_p99_s",
    "never_started",
    "idle_held_gpu_hours",
    "partial_start_gpu_hours",
    "thrown_away_gpu_hours",
    "wasted_gpu_hours",
    "restarts",
    "failed",
)


def _waits(engine: Engine, gang: bool) -> tuple[list[int], int]:
    """Each group's wait (censored at the run's end when it never started), and how many
    are censored; rejected groups and arrivals after the run's end left out."""
    arrivals = engine.setup.workload.arrivals
    chosen = [
        o
        for o in engine.embedder.originals
        if (sum(m.min_start for m in arrivals[o.index].spec.members) > 1) == gang
    ]
    return waits_of(chosen, engine.now_ns)


def _seconds(ns: int | None) -> float | None:
    return None if ns is None else round(ns / NS_PER_SECOND, 1)


def run_figures(setup: SimSetup, policy: str, factory: ControllerFactory) -> RunFigures:
    result, engine = run_policy(setup, policy, factory)
    gang, gang_never = _waits(engine, gang=True)
    small, small_never = _waits(engine, gang=False)
    return RunFigures(
        seed=setup.options.seed,
        gangs=len(gang),
        small_jobs=len(small),
        gang_never_started=gang_never,
        small_never_started=small_never,
        gang_time_to_start_p50_s=_seconds(percentile(gang, 50)),
        gang_time_to_start_p99_s=_seconds(percentile(gang, 99)),
        small_time_to_start_p50_s=_seconds(percentile(small, 50)),
        small_time_to_start_p99_s=_seconds(percentile(small, 99)),
        idle_held_gpu_hours=round(result.idle_held_gpu_hours, 2),
        partial_start_gpu_hours=round(result.partial_start_waste_gpu_hours, 2),
        utilization=result.utilization,
        end_reason=result.end_reason,
        thrown_away_gpu_hours=round(result.thrown_away_gpu_hours, 2),
        wasted_gpu_hours=round(result.wasted_gpu_hours, 2),
        restarts=result.restarts,
        preemptions=result.preemptions,
        limit_kills=result.limit_kills,
        failed=result.failed,
        after_horizon=sum(1 for o in engine.embedder.originals if not took_part(o, engine.now_ns)),
        workloads=[WorkloadRun.of(w) for w in result.workloads],
        useful_utilization=_useful(result),
    )


def _useful(result: PolicyResult) -> float | None:
    """Utilisation of useful work: busy GPU-hours minus those thrown away, over capacity."""
    if not result.capacity_gpu_hours:
        return None
    useful = max(0.0, result.busy_gpu_hours - result.thrown_away_gpu_hours)
    return round(useful / result.capacity_gpu_hours, 4)


def spread(values: Iterable[float | int | None]) -> Spread:
    known = [float(v) for v in values if v is not None]
    if not known:
        return Spread(None, None, None)
    return Spread(round(statistics.median(known), 2), min(known), max(known))


def summarise(runs: Sequence[RunFigures]) -> dict[str, Spread]:
    return {name: spread(getattr(r, name) for r in runs) for name in SUMMARISED}


def summarise_workloads(runs: Sequence[RunFigures]) -> dict[str, dict[str, Spread]]:
    """Per workload, each figure's median and range over the runs (seeds)."""
    names = sorted({w.workload for r in runs for w in r.workloads})
    out = {}
    for name in names:
        rows = [w for r in runs for w in r.workloads if w.workload == name]
        out[name] = {f: spread(getattr(w, f) for w in rows) for f in WORKLOAD_SUMMARISED}
    return out


def measure(
    setups: Callable[[int], SimSetup],
    seeds: Sequence[int],
    policies: Sequence[str],
    factory: ControllerFactory,
    progress: Callable[[str, int, RunFigures], None] | None = None,
) -> dict[str, list[RunFigures]]:
    """Every policy over every seed's setup (``setups(seed)``), seed by seed."""
    runs: dict[str, list[RunFigures]] = {p: [] for p in policies}
    for seed in seeds:
        setup = setups(seed)
        for policy in policies:
            figures = run_figures(setup, policy, factory)
            runs[policy].append(figures)
            if progress is not None:
                progress(policy, seed, figures)
    return runs
