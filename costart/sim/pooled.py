"""The figures a run's groups give pooled, shared by the simulator's `PolicyResult`
(`costart.sim.results`) and a log's `LogFigures` (`costart.replay.outcomes`): both count
and time the same originals with the same `GpuUsage`, so they are computed once here.

They come as keyword arguments for those structs, not as a struct of their own: each
struct keeps its fields in its own order (its JSON's), so a shared base would reorder
them, and a third declaration of the same fields would be the copy this removes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from costart.sim.breakdown import WorkloadFigures, hours
from costart.sim.metrics import GpuUsage, Original


def pooled_fields(
    pool: WorkloadFigures,
    originals: Sequence[Original],
    usage: GpuUsage,
    capacity_ns: int,
    deadlocked: int,
) -> dict[str, Any]:
    """The pooled figures of settled ``originals`` by field name (``pool``: `figures_of`
    over them to the run's end; ``usage``: their GPU integrals; ``capacity_ns``: the
    GPU-ns the cluster had over the run; ``deadlocked``: how many groups were deadlocked
    at its end): outcome counts, times to start (seconds), GPU use (GPU-hours). Wasted =
    idle-held + partial-start waste + thrown away; utilization = busy / capacity (0 over
    no capacity)."""
    outcomes = [o.outcome for o in originals]
    idle, waste, thrown = usage.idle_gpu_ns, usage.waste_gpu_ns, usage.thrown_gpu_ns
    return {
        "groups": pool.groups,
        "started": pool.started,
        "never_started": pool.never_started,
        "succeeded": outcomes.count("succeeded"),
        "failed": outcomes.count("failed"),
        "cancelled": outcomes.count("cancelled"),
        "partial_starts": pool.partial_starts,
        "deadlocked": deadlocked,
        "time_to_start_p50_s": pool.time_to_start_p50_s,
        "time_to_start_p90_s": pool.time_to_start_p90_s,
        "time_to_start_p99_s": pool.time_to_start_p99_s,
        "censored_waits": pool.censored_waits,
        "idle_held_gpu_hours": hours(idle),
        "partial_start_waste_gpu_hours": hours(waste),
        "thrown_away_gpu_hours": hours(thrown),
        "wasted_gpu_hours": hours(idle + waste + thrown),
        "busy_gpu_hours": hours(usage.busy_gpu_ns),
        "capacity_gpu_hours": hours(capacity_ns),
        "utilization": round(usage.busy_gpu_ns / capacity_ns, 4) if capacity_ns else 0.0,
        "restarts": pool.restarts,
        "preemptions": pool.preemptions,
        "limit_kills": pool.limit_kills,
    }
