"""Per-workload figures: a run's per-group figures broken down by the workload each
group came from (a scenario's ``[[workloads]]`` name, or a trace group's size class).

A pooled percentile hides the trade a placement policy makes: large gangs that starve
under ``atomic``, small jobs that queue behind a reservation under ``reserve``. So every
report gives time to start, outcomes and GPU use per workload as well as pooled.

Times to start count a group that never started with its wait until the run ended (a
lower bound, *censored*: a starving gang must not vanish from the percentile that shows
it), and say how many such waits a figure holds. Groups that would have arrived after
the run ended (its horizon) did not take part: they are left out of every figure and
counted apart.
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
    thrown_away_gpu_hours: float = 0.0
    wasted_gpu_hours: float = 0.0
    restarts: int = 0
    preemptions: int = 0
    limit_kills: int = 0
    failed: int = 0
    after_horizon: int = 0
    # How many of the waits behind the percentiles are censored (never started: waited
    # at least until the run ended).
    censored_waits: int = 0


def hours(gpu_ns: int) -> float:
    return round(gpu_ns / NS_PER_HOUR, 4)


def seconds(ns: int | None) -> float | None:
    return None if ns is None else round(ns / NS_PER_SECOND, 3)


def took_part(original: Original, end_ns: int) -> bool:
    """Did the group arrive before the run ended (at its horizon, or quiescent)?"""
    return original.at_ns <= end_ns


def waits_of(originals: Sequence[Original], end_ns: int) -> tuple[list[int], int]:
    """Each group's time to start, a group that never started counted with its wait
    until ``end_ns`` (censored); and how many are censored. Rejected groups and groups
    arriving after ``end_ns`` are left out (no negative waits)."""
    waits: list[int] = []
    censored = 0
    for o in originals:
        if o.outcome == "rejected" or not took_part(o, end_ns):
            continue
        if o.started_ns is None:
            censored += 1
            waits.append(end_ns - o.at_ns)
        else:
            waits.append(o.started_ns - o.at_ns)
    return waits, censored


def figures_of(name: str, members: Sequence[Original], end_ns: int) -> WorkloadFigures:
    """One workload's (or the pool's) figures; the originals must be settled
    (`GpuUsage.settle`) to the end of the run."""
    after = sum(1 for o in members if not took_part(o, end_ns))
    present = [o for o in members if took_part(o, end_ns)]
    waits, censored = waits_of(present, end_ns)
    rejected = sum(1 for o in present if o.outcome == "rejected")
    idle = sum(o.idle_gpu_ns for o in present)
    waste = sum(o.waste_gpu_ns for o in present)
    thrown = sum(o.thrown_gpu_ns for o in present)
    return WorkloadFigures(
        workload=name,
        groups=len(present),
        started=len(waits) - censored,
        never_started=censored,
        rejected=rejected,
        partial_starts=sum(1 for o in present if o.partial),
        time_to_start_p50_s=seconds(percentile(waits, 50)),
        time_to_start_p90_s=seconds(percentile(waits, 90)),
        time_to_start_p99_s=seconds(percentile(waits, 99)),
        time_to_start_max_s=seconds(max(waits) if waits else None),
        idle_held_gpu_hours=hours(idle),
        partial_start_waste_gpu_hours=hours(waste),
        busy_gpu_hours=hours(sum(o.busy_gpu_ns for o in present)),
        thrown_away_gpu_hours=hours(thrown),
        wasted_gpu_hours=hours(idle + waste + thrown),
        restarts=sum(o.restarts for o in present),
        preemptions=sum(o.preemptions for o in present),
        limit_kills=sum(o.limit_kills for o in present),
        failed=sum(1 for o in present if o.outcome == "failed"),
        after_horizon=after,
        censored_waits=censored,
    )


def by_workload(originals: Sequence[Original], end_ns: int) -> list[WorkloadFigures]:
    """Figures per workload, in workload name order (settled originals)."""
    groups: dict[str, list[Original]] = {}
    for original in originals:
        groups.setdefault(original.workload, []).append(original)
    return [figures_of(name, groups[name], end_ns) for name in sorted(groups)]
