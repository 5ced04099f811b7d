"""The comparison report: a JSON document and a PNG plot (matplotlib, Agg backend).

The JSON holds only what the seed determines (no wall-clock times), so two runs with
the same seed write the same bytes. The terminal table lives in the CLI.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final, Protocol

import msgspec

from costart.sim.breakdown import WorkloadFigures
from costart.sim.metrics import Sample
from costart.sim.results import PolicyResult
from costart.sim.setup import SimSetup, describe_setup

MAX_PLOT_POINTS = 4000
HOUR_NS: Final = 3600 * 10**9
_encoder = msgspec.json.Encoder(order="sorted")


class SimReport(msgspec.Struct, frozen=True):
    """Every policy's figures for one drawn setup, with the options that drew it."""

    scenario: str
    seed: int
    options: list[str]
    assumptions: list[str]
    rejected: list[str]
    policies: list[PolicyResult]


def build_report(setup: SimSetup, results: list[PolicyResult], rejected: list[str]) -> SimReport:
    return SimReport(
        scenario=setup.name,
        seed=setup.options.seed,
        options=describe_setup(setup),
        assumptions=list(setup.workload.assumptions),
        rejected=rejected[:100],
        policies=results,
    )


def report_json(report: SimReport) -> bytes:
    """Canonical JSON (sorted keys), the same bytes for the same seed."""
    return msgspec.json.format(_encoder.encode(report), indent=2) + b"\n"


def _thin(timeline: list[Sample]) -> list[Sample]:
    step = max(1, len(timeline) // MAX_PLOT_POINTS)
    return timeline[::step] + ([timeline[-1]] if timeline and len(timeline) % step else [])


# One style per policy, so series that coincide (atomic and reserve often do) stay
# distinguishable: the first is drawn widest, the later ones narrower and dashed on top.
_STYLES: Final[tuple[dict[str, Any], ...]] = (
    {"linestyle": "-", "linewidth": 4.0, "alpha": 0.55},
    {"linestyle": "--", "linewidth": 2.0, "alpha": 0.95},
    {"linestyle": ":", "linewidth": 2.0, "alpha": 0.95},
    {"linestyle": "-.", "linewidth": 1.5, "alpha": 0.95},
)


def series(
    result: PolicyResult, end_ns: int, origin_ns: int = 0
) -> tuple[list[float], list[float], list[int]]:
    """One policy's plotted points (hours, utilization numerator, waiting groups), run
    flat from its last sample to ``end_ns``: a run that stopped early (a deadlock with
    nothing left to happen) stays visible to the end instead of vanishing."""
    return timeline_series(result.timeline, end_ns, origin_ns)


def timeline_series(
    timeline: list[Sample], end_ns: int, origin_ns: int = 0
) -> tuple[list[float], list[float], list[int]]:
    """A timeline's plotted points (hours since ``origin_ns``, busy GPUs, waiting
    groups), carried flat from its last sample to ``end_ns``."""
    points = _thin(timeline)
    hours = [(p.t_ns - origin_ns) / HOUR_NS for p in points]
    busy = [float(p.busy_gpus) for p in points]
    waiting = [p.waiting for p in points]
    if points and points[-1].t_ns < end_ns:
        hours.append((end_ns - origin_ns) / HOUR_NS)
        busy.append(busy[-1])
        waiting.append(waiting[-1])
    return hours, busy, waiting


def write_plot(
    report: SimReport, capacity_gpus: int, path: Path, headline: str | None = None
) -> None:
    """First the headline: wasted GPU-hours per policy, stacked in their three parts,
    with partial starts, failed and never-started groups written on each bar. Then
    utilization (busy / capacity GPUs) and groups waiting over time, one line per policy,
    each to the end of the longest run; deadlocked groups are marked; last, time to start
    per workload (p50 bars, p99 marks), policies side by side, a workload with groups
    that never started drawn hatched to its censored wait and labelled with the count."""
    import matplotlib  # noqa: PLC0415 - only the report needs it, and it is slow to import

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415
    from matplotlib.ticker import MaxNLocator  # noqa: PLC0415

    end_ns = max(
        (
            max(round(r.end_s * 1e9), r.timeline[-1].t_ns if r.timeline else 0)
            for r in report.policies
        ),
        default=0,
    )
    figure = plt.figure(figsize=(11, 13))
    waste_bars(figure.add_subplot(4, 1, 1), report)
    top = figure.add_subplot(4, 1, 2)
    bottom = figure.add_subplot(4, 1, 3, sharex=top)
    workload_bars(figure.add_subplot(4, 1, 4), report)
    for k, result in enumerate(report.policies):
        style = _STYLES[k % len(_STYLES)]
        hours, busy, waiting = series(result, end_ns)
        label = result.policy
        if result.deadlocked:
            label += f" ({result.deadlocked} deadlocked)"
        utilization = [b / max(capacity_gpus, 1) for b in busy]
        (line,) = top.step(hours, utilization, where="post", label=label, **style)
        bottom.step(hours, waiting, where="post", label=label, color=line.get_color(), **style)
        if result.deadlocked and hours:
            bottom.plot(
                [hours[-1]], [waiting[-1]], marker="X", markersize=11, color=line.get_color()
            )
            bottom.annotate(
                f"{result.deadlocked} deadlocked",
                (hours[-1], waiting[-1]),
                textcoords="offset points",
                xytext=(-8, 8),
                ha="right",
                color=line.get_color(),
            )
    top.set_ylabel("utilization (busy GPUs)")
    top.set_ylim(0, 1.05)
    top.legend(loc="upper right")
    bottom.set_ylabel("groups waiting to start")
    bottom.yaxis.set_major_locator(MaxNLocator(integer=True))
    most = max((p.waiting for r in report.policies for p in r.timeline), default=0)
    bottom.set_ylim(0, most + 1)  # headroom for the deadlock marks
    bottom.set_xlabel("virtual time (hours)")
    title = f"costart sim: {report.scenario} (seed {report.seed})"
    figure.suptitle(title if headline is None else f"{title}\n{headline}")
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)


_WASTE_PARTS: Final = (
    ("idle_held_gpu_hours", "idle-held", "#9ecae1"),
    ("partial_start_waste_gpu_hours", "partial-start waste", "#fdae6b"),
    ("thrown_away_gpu_hours", "thrown away", "#e6550d"),
)


class WasteFigures(Protocol):
    """What a waste bar is drawn from: a policy's result, or a log's figures
    (`costart.replay.outcomes`)."""

    @property
    def idle_held_gpu_hours(self) -> float: ...
    @property
    def partial_start_waste_gpu_hours(self) -> float: ...
    @property
    def thrown_away_gpu_hours(self) -> float: ...
    @property
    def wasted_gpu_hours(self) -> float: ...
    @property
    def partial_starts(self) -> int: ...
    @property
    def failed(self) -> int: ...
    @property
    def never_started(self) -> int: ...


def waste_bars(axes: Any, report: SimReport) -> None:
    """Wasted GPU-hours per policy (`waste_bars_of`)."""
    waste_bars_of(axes, [r.policy for r in report.policies], report.policies)


def waste_bars_of(axes: Any, names: Sequence[str], results: Sequence[WasteFigures]) -> None:
    """Wasted GPU-hours per named result, stacked (idle-held, partial-start, thrown
    away), each bar labelled with its total and the groups it hurt."""
    xs = list(range(len(names)))
    bottoms = [0.0] * len(names)
    for field, label, color in _WASTE_PARTS:
        values = [getattr(r, field) for r in results]
        axes.bar(xs, values, 0.6, bottom=bottoms, label=label, color=color)
        bottoms = [b + v for b, v in zip(bottoms, values, strict=True)]
    top = max(bottoms, default=0.0) or 1.0
    for x, result in zip(xs, results, strict=True):
        notes = [f"{result.wasted_gpu_hours:.0f} GPU-h"]
        if result.partial_starts:
            notes.append(f"{result.partial_starts} partial starts")
        if result.failed:
            notes.append(f"{result.failed} failed")
        if result.never_started:
            notes.append(f"{result.never_started} never started")
        axes.annotate(
            "\n".join(notes),
            (x, bottoms[x]),
            textcoords="offset points",
            xytext=(0, 3),
            ha="center",
            va="bottom",
            fontsize="small",
        )
    axes.set_ylim(0, top * 1.6)
    axes.set_xticks(xs, names)
    axes.set_ylabel("wasted GPU-hours")
    axes.legend(loc="upper left", fontsize="small")


def workload_bars(axes: Any, report: SimReport) -> None:
    """Time to start per workload: a p50 bar and a p99 mark per policy, in minutes when
    every figure is under two hours (0.03 h reads badly), else in hours."""
    names = sorted({w.workload for r in report.policies for w in r.workloads})
    width = 0.8 / max(len(report.policies), 1)
    longest_s = max(
        (
            getattr(w, field) or 0.0
            for r in report.policies
            for w in r.workloads
            for field in ("time_to_start_p50_s", "time_to_start_p99_s")
        ),
        default=0.0,
    )
    unit, per_s = ("min", 60.0) if longest_s < 2 * 3600 else ("h", 3600.0)
    for k, result in enumerate(report.policies):
        figures = {w.workload: w for w in result.workloads}
        xs = [i + k * width for i in range(len(names))]
        p50 = [_in_unit(figures.get(n), "time_to_start_p50_s", per_s) for n in names]
        p99 = [_in_unit(figures.get(n), "time_to_start_p99_s", per_s) for n in names]
        bars = axes.bar(xs, p50, width, label=f"{result.policy} p50")
        color = bars.patches[0].get_facecolor() if bars.patches else None
        axes.scatter(xs, p99, marker="_", s=200, color=color)
        for x, name, bar in zip(xs, names, bars.patches, strict=True):
            w = figures.get(name)
            if w is None or not w.never_started:
                continue
            mark_censored(axes, x, bar, f"{w.never_started} never\nstarted")
    axes.set_xticks([i + 0.4 - width / 2 for i in range(len(names))], names)
    axes.set_ylabel(f"time to start ({unit}): p50 bar, p99 mark")
    axes.set_ylim(0, longest_s / per_s * 1.25 if longest_s else 1.0)
    axes.legend(loc="upper right", fontsize="x-small", ncol=2)


def mark_censored(axes: Any, x: float, bar: Any, label: str) -> None:
    """Mark a time-to-start bar at ``x`` that holds waits that never ended: they are
    censored at the run's end, so the bar is drawn hatched to that height and labelled,
    never left to read as a short (or zero) wait."""
    bar.set_hatch("xx")
    bar.set_edgecolor("black")
    axes.annotate(
        label,
        (x, bar.get_height()),
        textcoords="offset points",
        xytext=(0, 2),
        ha="center",
        va="bottom",
        fontsize="x-small",
        color="black",
    )


def _in_unit(figures: WorkloadFigures | None, field: str, per_s: float) -> float:
    value = None if figures is None else getattr(figures, field)
    return 0.0 if value is None else value / per_s
