"""The figures a run's groups give pooled, shared by the simulator's `PolicyResult`
(`costart.sim.results`) and a log's `LogFigures` (`costart.replay.outcomes`): both count
and time the same originals with the same `GpuUsage`, so they are computed once here."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from costart.sim.breakdown import WorkloadFigures, hours
from costart.sim.metrics import GpuUsage, Original


class PooledFigures(msgspec.Struct, frozen=True):
    """Outcome counts, times to start (seconds) and GPU use (GPU-hours) over every group.
    Wasted GPU-hours = idle-held + partial-start waste + thrown away; utilization = busy
    GPU-hours / capacity GPU-hours (0 over no capacity)."""

    groups: int
    started: int
    never_started: int
    succeeded: int
    failed: int
    cancelled: int
    partial_starts: int
    deadlocked: int
    time_to_start_p50_s: float | None
    time_to_start_p90_s: float | None
    time_to_start_p99_s: float | None
    censored_waits: int
    idle_held_gpu_hours: float
    partial_start_waste_gpu_hours: float
    thrown_away_gpu_hours: float
    wasted_gpu_hours: float
    busy_gpu_hours: float
    capacity_gpu_hours: float
    utilization: float
    restarts: int
    preemptions: int
    limit_kills: int

    def fields(self) -> dict[str, Any]:
        """The figures by field name, to fill the same-named fields of a result."""
        return msgspec.structs.asdict(self)


def pooled_figures(
    pool: WorkloadFigures,
    originals: Sequence[Original],
    usage: GpuUsage,
    capacity_ns: int,
    deadlocked: int,
) -> PooledFigures:
    """The pooled figures of settled ``originals`` (``pool``: `figures_of` over them to the
    run's end), ``usage`` their GPU integrals, ``capacity_ns`` the GPU-ns the cluster had
    over the run, ``deadlocked`` how many groups were deadlocked at its end."""
    outcomes = [o.outcome for o in originals]
    idle, waste, thrown = usage.idle_gpu_ns, usage.waste_gpu_ns, usage.thrown_gpu_ns
    return PooledFigures(
        groups=pool.groups,
        started=pool.started,
        never_started=pool.never_started,
        succeeded=outcomes.count("succeeded"),
        failed=outcomes.count("failed"),
        cancelled=outcomes.count("cancelled"),
        partial_starts=pool.partial_starts,
        deadlocked=deadlocked,
        time_to_start_p50_s=pool.time_to_start_p50_s,
        time_to_start_p90_s=pool.time_to_start_p90_s,
        time_to_start_p99_s=pool.time_to_start_p99_s,
        censored_waits=pool.censored_waits,
        idle_held_gpu_hours=hours(idle),
        partial_start_waste_gpu_hours=hours(waste),
        thrown_away_gpu_hours=hours(thrown),
        wasted_gpu_hours=hours(idle + waste + thrown),
        busy_gpu_hours=hours(usage.busy_gpu_ns),
        capacity_gpu_hours=hours(capacity_ns),
        utilization=round(usage.busy_gpu_ns / capacity_ns, 4) if capacity_ns else 0.0,
        restarts=pool.restarts,
        preemptions=pool.preemptions,
        limit_kills=pool.limit_kills,
    )
