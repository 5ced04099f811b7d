"""Two logs side by side: what actually happened and what would have.

Every figure for both with the difference (what-if minus actual), and the groups whose
fate changed most, matched by name (and occurrence, for a name submitted again):

* started in one and not the other (submission order);
* started in both but ended otherwise, e.g. succeeded in one and failed in the other
  (submission order);
* wait changed most, by the size of the change, largest first;
* wasted GPU-hours changed most, the same way.

Ties go by name then occurrence, so the order is stable (ADR 0135). A wait that never
ended is counted until its window's end (a lower bound, ``censored``), so a change
involving one is a bound too and is marked so.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import msgspec

from costart.display import clock, duration
from costart.replay.outcomes.figures import GroupFate, LogFigures

MOST_CHANGED = 10
"""How many groups each "changed most" list keeps."""


class FigureRow(msgspec.Struct, frozen=True):
    """One figure for both logs, and what-if minus actual (None when either is
    unknown). ``unit``: s (seconds), gpu_h (GPU-hours), share (0..1) or count.
    ``censored``: does the actual's or the what-if's value hold waits that never ended
    (then it is a lower bound, shown with ``≥``)."""

    figure: str
    unit: str
    actual: float | None
    whatif: float | None
    difference: float | None
    actual_censored: bool = False
    whatif_censored: bool = False


class FateChange(msgspec.Struct, frozen=True):
    """One group whose fate changed: its fate in each log (None: not in that log) and
    the change measured (``change``: the what-if's value minus the actual's, seconds of
    wait or wasted GPU-hours; for a start that changed, the wait's change)."""

    group: str
    actual: GroupFate | None
    whatif: GroupFate | None
    change: float | None


class Comparison(msgspec.Struct, frozen=True):
    """What happened (``actual``) and what would have (``whatif``), figure by figure, with
    the groups whose fate changed most; groups in one log only are named apart."""

    actual: LogFigures
    whatif: LogFigures
    figures: list[FigureRow]
    start_changed: list[FateChange]
    wait_changed: list[FateChange]
    wasted_changed: list[FateChange]
    only_actual: list[str]
    only_whatif: list[str]
    assumptions: list[str] = msgspec.field(default_factory=list)
    end_changed: list[FateChange] = msgspec.field(default_factory=list)
    """Groups that started in both logs and ended otherwise (``change``: the wait's)."""

    @property
    def changed(self) -> bool:
        """Did any group's fate change (or a group appear in one log only)?"""
        return any(
            (
                self.start_changed,
                self.end_changed,
                self.wait_changed,
                self.wasted_changed,
                self.only_actual,
                self.only_whatif,
            )
        )


# (figure, unit, how to read it from LogFigures, whether censored waits bias it)
_FIGURES: tuple[tuple[str, str, Callable[[LogFigures], float | None], bool], ...] = (
    ("groups", "count", lambda f: f.groups, False),
    ("started", "count", lambda f: f.started, False),
    ("never started", "count", lambda f: f.never_started, False),
    ("succeeded", "count", lambda f: f.succeeded, False),
    ("failed", "count", lambda f: f.failed, False),
    ("cancelled", "count", lambda f: f.cancelled, False),
    ("time to start p50", "s", lambda f: f.time_to_start_p50_s, True),
    ("time to start p90", "s", lambda f: f.time_to_start_p90_s, True),
    ("time to start p99", "s", lambda f: f.time_to_start_p99_s, True),
    ("wasted", "gpu_h", lambda f: f.wasted_gpu_hours, False),
    ("idle-held", "gpu_h", lambda f: f.idle_held_gpu_hours, False),
    ("partial-start waste", "gpu_h", lambda f: f.partial_start_waste_gpu_hours, False),
    ("thrown away", "gpu_h", lambda f: f.thrown_away_gpu_hours, False),
    ("busy", "gpu_h", lambda f: f.busy_gpu_hours, False),
    ("deadlocked", "count", lambda f: f.deadlocked, False),
    ("partial starts", "count", lambda f: f.partial_starts, False),
    ("restarts", "count", lambda f: f.restarts, False),
    ("utilization", "share", lambda f: f.utilization, False),
)


def _row(
    name: str,
    unit: str,
    read: Callable[[LogFigures], float | None],
    waits: bool,
    actual: LogFigures,
    whatif: LogFigures,
) -> FigureRow:
    a, w = read(actual), read(whatif)
    difference = None if a is None or w is None else round(w - a, 4)
    return FigureRow(
        figure=name,
        unit=unit,
        actual=a,
        whatif=w,
        difference=difference,
        actual_censored=waits and actual.censored_waits > 0,
        whatif_censored=waits and whatif.censored_waits > 0,
    )


def _by_label(figures: LogFigures) -> dict[str, GroupFate]:
    return {fate.label: fate for fate in figures.fates}


def _order(fates: dict[str, GroupFate], label: str) -> tuple[int, int, str]:
    fate = fates[label]
    return (fate.submitted_ns, fate.occurrence, fate.name)


def compare(
    actual: LogFigures,
    whatif: LogFigures,
    most: int = MOST_CHANGED,
    assumptions: Sequence[str] = (),
) -> Comparison:
    """Each figure of both logs with its difference, and up to ``most`` groups in each
    "changed most" list (the starts that changed are all listed); ``assumptions`` are
    kept with it, and one is added for each log carried past its last event."""
    figures = [_row(n, u, read, w, actual, whatif) for n, u, read, w in _FIGURES]
    mine, theirs = _by_label(actual), _by_label(whatif)
    both = sorted(set(mine) & set(theirs), key=lambda label: _order(mine, label))
    start_changed = [
        FateChange(label, mine[label], theirs[label], _change(mine[label], theirs[label], "wait_s"))
        for label in both
        if mine[label].started != theirs[label].started
    ]
    end_changed = [
        FateChange(label, mine[label], theirs[label], _change(mine[label], theirs[label], "wait_s"))
        for label in both
        if mine[label].started and theirs[label].started and mine[label].end != theirs[label].end
    ]
    return Comparison(
        actual=actual,
        whatif=whatif,
        figures=figures,
        start_changed=start_changed,
        end_changed=end_changed,
        wait_changed=_most(both, mine, theirs, "wait_s", most),
        wasted_changed=_most(both, mine, theirs, "wasted_gpu_hours", most),
        only_actual=sorted(set(mine) - set(theirs), key=lambda label: _order(mine, label)),
        only_whatif=sorted(set(theirs) - set(mine), key=lambda label: _order(theirs, label)),
        assumptions=[*assumptions, *(_carried(f) for f in (actual, whatif) if _carried(f))],
    )


def _carried(figures: LogFigures) -> str:
    """The assumption a log carried past its last event rests on ("" if none)."""
    after = figures.window.end_ns - figures.last_event_ns
    if after <= 0:
        return ""
    return (
        f"{figures.label}: nothing happened in the {duration(after)} after its last event "
        f"({clock(figures.last_event_ns)}); what its groups held then they held to the end"
    )


def _change(actual: GroupFate, whatif: GroupFate, field: str) -> float:
    after: float = getattr(whatif, field)
    before: float = getattr(actual, field)
    return round(after - before, 4)


def _most(
    labels: list[str],
    mine: dict[str, GroupFate],
    theirs: dict[str, GroupFate],
    field: str,
    most: int,
) -> list[FateChange]:
    """The groups whose ``field`` changed by most (never those it did not change),
    largest change first, then by name and occurrence."""
    changes = [(label, _change(mine[label], theirs[label], field)) for label in labels]
    changed = [(label, change) for label, change in changes if change != 0]
    changed.sort(key=lambda item: (-abs(item[1]), mine[item[0]].name, mine[item[0]].occurrence))
    return [
        FateChange(label, mine[label], theirs[label], change) for label, change in changed[:most]
    ]
