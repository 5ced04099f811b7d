"""Per-workload figures: a run's per-group figures broken down by the workload each
group came from (a scenario's ``[[workloads]]`` name, or a trace group's size class).

A pooled percentile hides the trade a placement policy makes: large gangs that starve
under ``atomic``, small jobs that queue behind a reservation under ``reserve``. So every
report gives time to start, outcomes and GPU use per workload as well as pooled.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from costart.sim.metrics import NS_PER_HOUR, Original, percentile

NS_PER_SECOND = 10**9


class WorkloadFigures(msgspec.Struct, frozen=True):
    """One workload's figures under one policy (times in seconds, GPU use in GPU-hours).
    GPU-hours are integrated per group, so they sum (to rounding) to the pooled ones."""

    workload: str
    groups: int
    started: int
    never_started: int
    rejected: int
    partial_starts: int
    time_to_start_p50_s: float | None
    time_to_start_p90_s: float | None
    time_to_start_p99_s: float | None
    time_to_start_max_s: float | None
    idle_held_gpu_hours: float
    partial_start_waste_gpu_hours: float
    busy_gpu_hours: float


def hours(gpu_ns: int) -> float:
    return round(gpu_ns / NS_PER_HOUR, 4)


def seconds(ns: int | None) -> float | None:
    return None if ns is None else round(ns / NS_PER_SECOND, 3)


def by_workload(originals: Sequence[Original]) -> list[WorkloadFigures]:
    """Figures per workload, in workload name order. The originals must be settled
    (`GpuUsage.settle`) to the end of the run."""
    groups: dict[str, list[Original]] = {}
    for original in originals:
        groups.setdefault(original.workload, []).append(original)
    out = []
    for name in sorted(groups):
        members = groups[name]
        waits = [o.started_ns - o.at_ns for o in members if o.started_ns is not None]
        rejected = sum(1 for o in members if o.outcome == "rejected")
        out.append(
            WorkloadFigures(
                workload=name,
                groups=len(members),
                started=len(waits),
                never_started=len(members) - len(waits) - rejected,
                rejected=rejected,
                partial_starts=sum(1 for o in members if o.partial),
                time_to_start_p50_s=seconds(percentile(waits, 50)),
                time_to_start_p90_s=seconds(percentile(waits, 90)),
                time_to_start_p99_s=seconds(percentile(waits, 99)),
                time_to_start_max_s=seconds(max(waits) if waits else None),
                idle_held_gpu_hours=hours(sum(o.idle_gpu_ns for o in members)),
                partial_start_waste_gpu_hours=hours(sum(o.waste_gpu_ns for o in members)),
                busy_gpu_hours=hours(sum(o.busy_gpu_ns for o in members)),
            )
        )
    return out
