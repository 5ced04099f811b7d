"""The outcomes report on disk: ``outcomes.json`` (canonical JSON, sorted keys, the same
bytes for the same logs) and ``outcomes.png`` (matplotlib, the Agg backend), drawn
with `costart sim`'s own plot pieces (`costart.sim.report`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

import msgspec

from costart.display import clock, duration
from costart.replay.outcomes.compare import Comparison
from costart.replay.outcomes.figures import LogFigures
from costart.sim.report import mark_censored, timeline_series, waste_bars_of

JSON_NAME: Final = "outcomes.json"
PLOT_NAME: Final = "outcomes.png"
_encoder = msgspec.json.Encoder(order="sorted")
# The actual wide and faint underneath, the what-if dashed on top: equal series stay
# visible (the same styles as `costart sim`'s plot).
_STYLES: Final[tuple[dict[str, Any], ...]] = (
    {"linestyle": "-", "linewidth": 4.0, "alpha": 0.55},
    {"linestyle": "--", "linewidth": 2.0, "alpha": 0.95},
)


def comparison_json(comparison: Comparison) -> bytes:
    """The comparison as canonical JSON (sorted keys, indented, a final newline)."""
    return msgspec.json.format(_encoder.encode(comparison), indent=2) + b"\n"


def figures_json(figures: LogFigures) -> bytes:
    """One log's figures as canonical JSON."""
    return msgspec.json.format(_encoder.encode(figures), indent=2) + b"\n"


def write_outcomes(comparison: Comparison, out: Path | None) -> list[Path]:
    """Write ``outcomes.json`` and ``outcomes.png`` into the folder ``out`` (made if
    missing); None writes nothing. Returns the paths written."""
    if out is None:
        return []
    out.mkdir(parents=True, exist_ok=True)
    json_path, plot_path = out / JSON_NAME, out / PLOT_NAME
    json_path.write_bytes(comparison_json(comparison))
    write_plot(comparison, plot_path)
    return [json_path, plot_path]


def write_plot(comparison: Comparison, path: Path) -> None:
    """Four panels, actual beside what-if: wasted GPU-hours stacked in their three
    parts; utilization and groups waiting over time, each log from its window's start;
    time to start p50/p90/p99, a figure that holds waits that never ended hatched."""
    import matplotlib  # noqa: PLC0415 - only the report needs it, and it is slow to import

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415
    from matplotlib.ticker import MaxNLocator  # noqa: PLC0415

    logs = (comparison.actual, comparison.whatif)
    figure = plt.figure(figsize=(11, 13))
    waste_bars_of(figure.add_subplot(4, 1, 1), [f.label for f in logs], logs)
    top = figure.add_subplot(4, 1, 2)
    bottom = figure.add_subplot(4, 1, 3, sharex=top)
    for style, figures in zip(_STYLES, logs, strict=True):
        window = figures.window
        hours, busy, waiting = timeline_series(figures.timeline, window.end_ns, window.start_ns)
        label = figures.label + (
            f" ({figures.deadlocked} deadlocked)" if figures.deadlocked else ""
        )
        utilization = [b / max(figures.capacity_gpus, 1) for b in busy]
        (line,) = top.step(hours, utilization, where="post", label=label, **style)
        bottom.step(hours, waiting, where="post", label=label, color=line.get_color(), **style)
    top.set_ylabel("utilization (busy GPUs)")
    top.set_ylim(0, 1.05)
    top.legend(loc="upper right")
    bottom.set_ylabel("groups waiting to start")
    bottom.yaxis.set_major_locator(MaxNLocator(integer=True))
    bottom.set_xlabel("hours from each log's start")
    _start_bars(figure.add_subplot(4, 1, 4), logs)
    a, w = logs
    figure.suptitle(
        f"costart replay outcomes: {a.label} vs {w.label}\n"
        f"{a.label} from {clock(a.window.start_ns)} for {_hours_text(a)}, "
        f"{w.label} from {clock(w.window.start_ns)} for {_hours_text(w)}"
    )
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)


def _hours_text(figures: LogFigures) -> str:
    return duration(figures.window.span_ns)


_PERCENTILES: Final = (
    ("p50", "time_to_start_p50_s"),
    ("p90", "time_to_start_p90_s"),
    ("p99", "time_to_start_p99_s"),
)


def _start_bars(axes: Any, logs: tuple[LogFigures, LogFigures]) -> None:
    """Time to start p50/p90/p99 for both logs, in minutes when every figure is under two
    hours, else hours; a log holding waits that never ended has its bars hatched and
    labelled (they are lower bounds)."""
    longest = max(
        (getattr(f, field) or 0.0 for f in logs for _, field in _PERCENTILES), default=0.0
    )
    unit, per_s = ("min", 60.0) if longest < 2 * 3600 else ("h", 3600.0)
    width = 0.4
    for k, figures in enumerate(logs):
        xs = [i + k * width for i in range(len(_PERCENTILES))]
        values = [(getattr(figures, field) or 0.0) / per_s for _, field in _PERCENTILES]
        bars = axes.bar(xs, values, width, label=figures.label)
        if not figures.censored_waits:
            continue
        for x, bar in zip(xs, bars.patches, strict=True):
            mark_censored(axes, x, bar, f"≥ ({figures.censored_waits} never started)")
    axes.set_xticks([i + width / 2 for i in range(len(_PERCENTILES))], [n for n, _ in _PERCENTILES])
    axes.set_ylabel(f"time to start ({unit})")
    axes.set_ylim(0, longest / per_s * 1.3 if longest else 1.0)
    axes.legend(loc="upper left", fontsize="small")
