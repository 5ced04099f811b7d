"""The comparison report: a JSON document and a PNG plot (matplotlib, Agg backend).

The JSON holds only what the seed determines (no wall-clock times), so two runs with
the same seed write the same bytes. The terminal table lives in the CLI.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec

from costart.sim.breakdown import WorkloadFigures
from costart.sim.metrics import Sample
from costart.sim.results import PolicyResult
from costart.sim.setup import SimSetup, describe_setup

MAX_PLOT_POINTS = 4000
_encoder = msgspec.json.Encoder(order="sorted")


class Report(msgspec.Struct, frozen=True):
    """Every policy's figures for one drawn setup, with the options that drew it."""

    scenario: str
    seed: int
    options: list[str]
    assumptions: list[str]
    rejected: list[str]
    policies: list[PolicyResult]


def build_report(setup: SimSetup, results: list[PolicyResult], rejected: list[str]) -> Report:
    return Report(
        scenario=setup.name,
        seed=setup.options.seed,
        options=describe_setup(setup),
        assumptions=list(setup.workload.assumptions),
        rejected=rejected[:100],
        policies=results,
    )


def report_json(report: Report) -> bytes:
    """Canonical JSON (sorted keys), the same bytes for the same seed."""
    return msgspec.json.format(_encoder.encode(report), indent=2) + b"\n"


def _thin(timeline: list[Sample]) -> list[Sample]:
    step = max(1, len(timeline) // MAX_PLOT_POINTS)
    return timeline[::step] + ([timeline[-1]] if timeline and len(timeline) % step else [])


def write_plot(report: Report, capacity_gpus: int, path: Path) -> None:
    """Utilization (busy / capacity GPUs) and queue length over time, one line per policy;
    below, time to start per workload (p50 bars, p99 marks), policies side by side."""
    import matplotlib  # noqa: PLC0415 - only the report needs it, and it is slow to import

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    figure = plt.figure(figsize=(10, 9))
    top = figure.add_subplot(3, 1, 1)
    bottom = figure.add_subplot(3, 1, 2, sharex=top)
    _workload_bars(figure.add_subplot(3, 1, 3), report)
    for result in report.policies:
        points = _thin(result.timeline)
        hours = [p.t_ns / 3.6e12 for p in points]
        top.step(
            hours,
            [p.busy_gpus / max(capacity_gpus, 1) for p in points],
            where="post",
            label=result.policy,
        )
        bottom.step(hours, [p.waiting for p in points], where="post", label=result.policy)
    top.set_ylabel("utilization (busy GPUs)")
    top.set_ylim(0, 1.05)
    top.legend(loc="upper right")
    bottom.set_ylabel("groups waiting to start")
    bottom.set_xlabel("virtual time (hours)")
    figure.suptitle(f"costart sim: {report.scenario} (seed {report.seed})")
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)


def _workload_bars(axes: Any, report: Report) -> None:
    """Time to start per workload: a p50 bar and a p99 mark per policy (hours)."""
    names = sorted({w.workload for r in report.policies for w in r.workloads})
    width = 0.8 / max(len(report.policies), 1)
    for k, result in enumerate(report.policies):
        figures = {w.workload: w for w in result.workloads}
        xs = [i + k * width for i in range(len(names))]
        p50 = [_hours_or_zero(figures.get(n), "time_to_start_p50_s") for n in names]
        p99 = [_hours_or_zero(figures.get(n), "time_to_start_p99_s") for n in names]
        bars = axes.bar(xs, p50, width, label=f"{result.policy} p50")
        axes.scatter(
            xs,
            p99,
            marker="_",
            s=200,
            color=bars.patches[0].get_facecolor() if bars.patches else None,
        )
    axes.set_xticks([i + 0.4 - width / 2 for i in range(len(names))], names)
    axes.set_ylabel("time to start (h): p50 bar, p99 mark")
    axes.legend(loc="upper right", fontsize="small")


def _hours_or_zero(figures: WorkloadFigures | None, field: str) -> float:
    value = None if figures is None else getattr(figures, field)
    return 0.0 if value is None else value / 3600
