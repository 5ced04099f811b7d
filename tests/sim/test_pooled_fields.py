"""The pooled figures both the simulator's `PolicyResult` and a log's `LogFigures` take
from `pooled_fields`: every one names a field of both, and each is worked out from the
originals and the usage it is given (numbers checked by hand)."""

from __future__ import annotations

import msgspec

from costart.replay.outcomes.figures import LogFigures
from costart.sim.breakdown import figures_of
from costart.sim.metrics import GpuUsage, Original
from costart.sim.pooled import pooled_fields
from costart.sim.results import PolicyResult

S = 10**9
HOUR = 3600 * S


def _fields(struct: type[msgspec.Struct]) -> set[str]:
    return {f.name for f in msgspec.structs.fields(struct)}


def _originals() -> list[Original]:
    done = Original(0, "done", at_ns=0)
    done.started_ns, done.outcome, done.ended_ns = 10 * S, "succeeded", 100 * S
    broke = Original(1, "broke", at_ns=0)
    broke.started_ns, broke.outcome, broke.ended_ns = 30 * S, "failed", 50 * S
    waits = Original(2, "waits", at_ns=20 * S)  # never starts: censored at the end
    return [done, broke, waits]


def test_every_pooled_figure_is_a_field_of_both_results() -> None:
    originals = _originals()
    fields = pooled_fields(figures_of("pooled", originals, 200 * S), originals, GpuUsage(8), 0, 0)
    assert set(fields) <= _fields(PolicyResult) & _fields(LogFigures)
    assert len(fields) == 22


def test_pooled_figures_from_the_originals_and_usage() -> None:
    originals = _originals()
    usage = GpuUsage(8)
    usage.idle_gpu_ns, usage.waste_gpu_ns, usage.thrown_gpu_ns = HOUR, 2 * HOUR, 3 * HOUR
    usage.busy_gpu_ns = 4 * HOUR
    pool = figures_of("pooled", originals, 200 * S)
    fields = pooled_fields(pool, originals, usage, 16 * HOUR, deadlocked=1)
    assert (fields["groups"], fields["started"], fields["never_started"]) == (3, 2, 1)
    assert (fields["succeeded"], fields["failed"], fields["cancelled"]) == (1, 1, 0)
    assert fields["deadlocked"] == 1 and fields["censored_waits"] == 1
    assert fields["time_to_start_p50_s"] == pool.time_to_start_p50_s
    assert fields["wasted_gpu_hours"] == 6.0 and fields["busy_gpu_hours"] == 4.0
    assert fields["capacity_gpu_hours"] == 16.0 and fields["utilization"] == 0.25
    assert pooled_fields(pool, originals, usage, 0, 0)["utilization"] == 0.0
