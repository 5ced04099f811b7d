"""The outcomes report as people read it: one log's figures, each group's fate, and two
logs side by side (`costart.replay.outcomes`). Durations in two units, ``≥`` before a
figure that holds waits that never ended (a lower bound), GPU-hours with their unit,
times as the log's clock reads them (ISO-8601 UTC, or ``t+`` on a simulator's)."""

from __future__ import annotations

from collections.abc import Sequence

from rich.table import Table

from costart.cli.tables import plain_table
from costart.display import clock, duration
from costart.replay.outcomes.compare import Comparison, FateChange, FigureRow
from costart.replay.outcomes.figures import GroupFate, LogFigures

NS_PER_SECOND = 10**9
ONLY_SHOWN = 5
"""How many groups found in one log only are named (then how many more)."""
CENSORED_NOTE = "≥: holds waits that never ended, a lower bound; ~: a change between bounds"


def _seconds(value: float) -> str:
    return duration(round(value * NS_PER_SECOND))


def value_text(unit: str, value: float | None, censored: bool = False) -> str:
    """One figure's value: a duration, GPU-hours, a percentage or a count."""
    if value is None:
        return "-"
    if unit == "s":
        text = _seconds(value)
        return f"≥{text}" if censored else text
    if unit == "gpu_h":
        return f"{value:.1f} GPU-h"
    if unit == "share":
        return f"{value:.1%}"
    return str(round(value))


def difference_text(row: FigureRow) -> str:
    """What-if minus actual, signed; ``≥``/``≤`` dropped: a difference of bounds is no
    bound, so it is marked ``~`` when either side is censored."""
    d = row.difference
    if d is None:
        return "-"
    if d == 0:
        return "same"
    sign = "+" if d > 0 else "-"
    size = abs(d)
    if row.unit == "s":
        text = f"{sign}{_seconds(size)}"
    elif row.unit == "gpu_h":
        text = f"{sign}{size:.1f} GPU-h"
    elif row.unit == "share":
        text = f"{sign}{size * 100:.2f} pts"
    else:
        text = f"{sign}{round(size)}"
    return f"~{text}" if row.actual_censored or row.whatif_censored else text


def window_text(figures: LogFigures) -> str:
    w = figures.window
    quiet = (
        f" (its last event at {clock(figures.last_event_ns)}: carried as it was then)"
        if figures.last_event_ns < w.end_ns
        else ""
    )
    return (
        f"{figures.label}: {figures.groups} groups, {figures.events} events, "
        f"{clock(w.start_ns)} to {clock(w.end_ns)} ({duration(w.span_ns)}){quiet}, "
        f"{figures.capacity_gpus} GPUs"
    )


def comparison_table(comparison: Comparison) -> Table:
    """Every figure for what actually happened and what would have, with the change."""
    a, w = comparison.actual, comparison.whatif
    table = plain_table(("figure", a.label, w.label, "change"), right=(a.label, w.label, "change"))
    for row in comparison.figures:
        table.add_row(
            _label(row),
            value_text(row.unit, row.actual, row.actual_censored),
            value_text(row.unit, row.whatif, row.whatif_censored),
            difference_text(row),
        )
    if any(row.actual_censored or row.whatif_censored for row in comparison.figures):
        table.caption, table.caption_justify = CENSORED_NOTE, "left"
    return table


def _label(row: FigureRow) -> str:
    if row.unit == "gpu_h":
        return f"{row.figure} GPU-hours" if row.figure in ("wasted", "busy") else f"  {row.figure}"
    return row.figure


def fate_text(fate: GroupFate | None) -> str:
    """One group's fate in one log: its wait (``≥``: it never started, waited at least
    so long), how it ended, the GPU-hours it wasted."""
    if fate is None:
        return "not in this log"
    wait = ("≥" if fate.censored else "") + _seconds(fate.wait_s)
    return f"{wait}, {fate.end}, {fate.wasted_gpu_hours:.1f} GPU-h"


def changes_table(comparison: Comparison) -> Table:
    """The groups whose fate changed most, one row each: starts that changed, ends that
    changed, then the waits and the wasted GPU-hours that changed most. A group on more than one list has
    its changes on one row, in that order, where it first appears."""
    a, w = comparison.actual.label, comparison.whatif.label
    table = plain_table(
        ("group", "changed", f"{a}: wait, end, wasted", f"{w}: wait, end, wasted"),
        title="Groups whose fate changed most",
    )
    sections: Sequence[tuple[str, list[FateChange], str]] = (
        ("started", comparison.start_changed, "s"),
        ("ended", comparison.end_changed, "s"),
        ("wait", comparison.wait_changed, "s"),
        ("wasted", comparison.wasted_changed, "gpu_h"),
    )
    rows: dict[str, tuple[FateChange, list[str]]] = {}  # insertion order: first appearance
    start_changed = {change.group for change in comparison.start_changed}
    for what, changes, unit in sections:
        for change in changes:
            if what == "wait" and change.group in start_changed:
                continue  # a start that changed says so, and both waits are on its row
            rows.setdefault(change.group, (change, []))[1].append(_change_text(what, change, unit))
    for group, (change, texts) in rows.items():
        table.add_row(group, ", ".join(texts), fate_text(change.actual), fate_text(change.whatif))
    for label, only in ((a, comparison.only_actual), (w, comparison.only_whatif)):
        for name in only[:ONLY_SHOWN]:
            table.add_row(name, f"only in {label}", "", "")
        if len(only) > ONLY_SHOWN:
            table.add_row(f"({len(only) - ONLY_SHOWN} more)", f"only in {label}", "", "")
    return table


def _change_text(what: str, change: FateChange, unit: str) -> str:
    if what == "started":
        now_started = change.whatif is not None and change.whatif.started
        return "now starts" if now_started else "no longer starts"
    if what == "ended" and change.actual is not None and change.whatif is not None:
        return f"{change.actual.end} → {change.whatif.end}"
    size = change.change or 0.0
    sign = "+" if size > 0 else "-"
    amount = _seconds(abs(size)) if unit == "s" else f"{abs(size):.1f} GPU-h"
    bound = unit == "s" and any(
        f is not None and f.censored for f in (change.actual, change.whatif)
    )
    return f"{what} {'~' if bound else ''}{sign}{amount}"


def figures_table(figures: LogFigures) -> Table:
    """One log's figures."""
    table = plain_table(("figure", "value"), right=("value",))
    censored = figures.censored_waits > 0
    rows = (
        ("started / never started", f"{figures.started} / {figures.never_started}"),
        (
            "succeeded / failed / cancelled",
            f"{figures.succeeded} / {figures.failed} / {figures.cancelled}",
        ),
        ("time to start p50", value_text("s", figures.time_to_start_p50_s, censored)),
        ("time to start p90", value_text("s", figures.time_to_start_p90_s, censored)),
        ("time to start p99", value_text("s", figures.time_to_start_p99_s, censored)),
        ("wasted GPU-hours", value_text("gpu_h", figures.wasted_gpu_hours)),
        ("  idle-held", value_text("gpu_h", figures.idle_held_gpu_hours)),
        ("  partial-start waste", value_text("gpu_h", figures.partial_start_waste_gpu_hours)),
        ("  thrown away", value_text("gpu_h", figures.thrown_away_gpu_hours)),
        ("busy GPU-hours", value_text("gpu_h", figures.busy_gpu_hours)),
        ("utilization (busy/capacity)", value_text("share", figures.utilization)),
        ("deadlocked groups", str(figures.deadlocked)),
        ("partial starts", str(figures.partial_starts)),
        (
            "restarts / preemptions / limit kills",
            f"{figures.restarts} / {figures.preemptions} / {figures.limit_kills}",
        ),
    )
    for label, value in rows:
        table.add_row(label, value)
    if censored:
        table.caption, table.caption_justify = CENSORED_NOTE, "left"
    return table


def fates_table(figures: LogFigures) -> Table:
    """Each group's fate, in submission order: times as the log's clock reads them."""
    table = plain_table(
        ("group", "submitted", "started", "end", "wait", "wasted", "restarts"),
        title=f"{figures.label}: each group's fate",
        right=("wait", "wasted", "restarts"),
    )
    for fate in figures.fates:
        wait = _seconds(fate.wait_s)
        table.add_row(
            fate.label,
            clock(fate.submitted_ns),
            "-" if fate.started_ns is None else clock(fate.started_ns),
            fate.end,
            f"≥{wait}" if fate.censored else wait,
            f"{fate.wasted_gpu_hours:.1f} GPU-h",
            str(fate.restarts),
        )
    return table
