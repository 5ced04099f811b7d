"""A waiting group's expected start as people read it (issue 36, ADR 0137), like Slurm's
``squeue --start``: a short cell for ``get -o wide`` and the board, a line for
``describe``, and the assumption the estimate rests on in words.

- ``in 1h20m (limit)`` / ``in 3h00m (estimate)`` / ``now`` / ``unknown (beyond 24h)`` / ``unknown (beyond 100 planned)``
- ``in 1h20m (limit, stale)`` when the estimate is older than the state it answers for

The words take plain values (the basis and the reason a start is not planned are the
planner's `costart.placement.shadow.StartEstimate` fields), so any layer can show them.
"""

from __future__ import annotations

from costart.display.timefmt import clock, duration, relative

NOT_WAITING = "-"
"""The cell of a group that is not waiting (running, placed, or ended)."""

_RESTS_ON = {
    "now": "fits now: it starts at the next scheduling session",
    "limit": "rests on the declared limits of the running work it waits for",
    "estimate": "rests on learned runtime estimates of the running work it waits for",
}


def assumption_text(basis: str, unplanned: str, depth: int, window_ns: int) -> str:
    """What the estimate rests on, in words (``depth``/``window_ns``: the plan's bounds)."""
    if basis in _RESTS_ON:
        return _RESTS_ON[basis]
    if unplanned == "depth":
        return f"beyond the {depth} groups planned: no start is estimated"
    return f"no start within the next {duration(window_ns)} window"


def _unknown(unplanned: str, depth: int, window_ns: int) -> str:
    if unplanned == "depth":
        return f"unknown (beyond {depth} planned)"
    return f"unknown (beyond {duration(window_ns)})"


def start_cell(
    start_ns: int | None,
    basis: str,
    unplanned: str,
    now_ns: int,
    *,
    depth: int,
    window_ns: int,
    stale: bool = False,
) -> str:
    """The short form: when (relative to ``now_ns``) and on what basis."""
    if start_ns is None:
        text = _unknown(unplanned, depth, window_ns)
        return f"{text[:-1]}, stale)" if stale else text
    if basis == "now":  # it fits now: nothing it waits for to name
        return "now (stale)" if stale else "now"
    when = "now" if start_ns <= now_ns else relative(start_ns, now_ns)
    tag = f"{basis}, stale" if stale else basis
    return f"{when} ({tag})"


def interval_text(earliest_ns: int | None, latest_ns: int | None, now_ns: int) -> str:
    """The interval meant to hold the start four times in five, relative to ``now_ns``;
    an open end is said as such."""
    low = "now" if earliest_ns is None or earliest_ns <= now_ns else relative(earliest_ns, now_ns)
    if latest_ns is None:
        return f"between {low} and an unbounded later time"
    high = "now" if latest_ns <= now_ns else relative(latest_ns, now_ns)
    return f"between {low} and {high}"


def start_line(
    start_ns: int | None,
    earliest_ns: int | None,
    latest_ns: int | None,
    basis: str,
    unplanned: str,
    now_ns: int,
    *,
    depth: int,
    window_ns: int,
) -> str:
    """``describe``'s line: the point as a time with its distance, the 80% interval,
    and the assumption in words."""
    assumption = assumption_text(basis, unplanned, depth, window_ns)
    if start_ns is None:
        return f"unknown: {assumption}"
    when = "now" if start_ns <= now_ns else f"{clock(start_ns)} ({relative(start_ns, now_ns)})"
    if earliest_ns == latest_ns == start_ns:  # no spread: the interval is the point
        return f"{when}; {assumption}"
    spread = interval_text(earliest_ns, latest_ns, now_ns)
    return f"{when}; 4 in 5 starts {spread}; {assumption}"


def freshness_text(position: int, planned_at_ns: int, now_ns: int, stale_reason: str | None) -> str:
    """Where the estimate was made: the log position and how long ago, and why it is
    stale if it is."""
    made = f"planned at log position {position}, {relative(planned_at_ns, now_ns)}"
    return f"{made}; stale: {stale_reason}" if stale_reason else made
