"""Scheduling quality over many seeds: what `bench/bench_scheduling.py` measures.

Per run, the groups split into *gangs* (more than one task to start together) and
*small jobs* (one task); for each: time to start at p50 and p99. A group that never
started counts with the time it waited until the run ended (a lower bound: a gang that
starves must not vanish from the percentile that shows it starving), and the count of
such groups is given beside. Per run also: idle-held and partial-start GPU-hours and
utilisation. Across seeds each figure is summarised by its median and its range.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterable, Sequence

import msgspec

from costart.sim.engine import Engine
from costart.sim.metrics import percentile
from costart.sim.ports import ControllerFactory
from costart.sim.results import run_policy
from costart.sim.setup import SimSetup

NS_PER_SECOND = 10**9


class RunFigures(msgspec.Struct, frozen=True):
    """One policy over one seed (seconds, GPU-hours)."""

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
    "utilization",
    "gang_never_started",
    "small_never_started",
)


def _waits(engine: Engine, gang: bool) -> tuple[list[int], int]:
    """Each group's wait (censored at the run's end when it never started)."""
    arrivals = engine.setup.workload.arrivals
    waits, never = [], 0
    for original in engine.embedder.originals:
        if original.outcome == "rejected":
            continue
        tasks = sum(m.min_start for m in arrivals[original.index].spec.members)
        if (tasks > 1) != gang:
            continue
        if original.started_ns is None:
            never += 1
            waits.append(engine.now_ns - original.at_ns)
        else:
            waits.append(original.started_ns - original.at_ns)
    return waits, never


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
    )


def spread(values: Iterable[float | int | None]) -> Spread:
    known = [float(v) for v in values if v is not None]
    if not known:
        return Spread(None, None, None)
    return Spread(round(statistics.median(known), 2), min(known), max(known))


def summarise(runs: Sequence[RunFigures]) -> dict[str, Spread]:
    return {name: spread(getattr(r, name) for r in runs) for name in SUMMARISED}


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
