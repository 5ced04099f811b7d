"""A waiting group's expected start in words (ADR 0137): the cell, the describe line,
the assumption and the freshness."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from costart.display.expected_start import (
    assumption_text,
    freshness_text,
    interval_text,
    start_cell,
    start_line,
)

S = 10**9
NOW = 1_800_000_000 * S
DAY = 86_400 * S
BOUNDS = {"depth": 100, "window_ns": DAY}


def test_the_cell_says_when_relative_to_now_and_on_what_it_rests():
    in_80m = NOW + 80 * 60 * S
    assert start_cell(in_80m, "limit", "", NOW, **BOUNDS) == "in 1h20m (limit)"
    assert start_cell(in_80m, "estimate", "", NOW, **BOUNDS) == "in 1h20m (estimate)"
    assert start_cell(NOW, "now", "", NOW, **BOUNDS) == "now"
    assert start_cell(NOW, "now", "", NOW, stale=True, **BOUNDS) == "now (stale)"
    # A start planned in the past (the plan is older than now) reads as now.
    assert start_cell(NOW - 5 * S, "limit", "", NOW, **BOUNDS) == "now (limit)"
    assert start_cell(in_80m, "limit", "", NOW, stale=True, **BOUNDS) == "in 1h20m (limit, stale)"


def test_no_planned_start_says_which_bound_it_is_beyond():
    assert start_cell(None, "unknown", "window", NOW, **BOUNDS) == "unknown (beyond 1d00h)"
    assert start_cell(None, "unknown", "depth", NOW, **BOUNDS) == "unknown (beyond 100 planned)"
    stale = start_cell(None, "unknown", "depth", NOW, stale=True, **BOUNDS)
    assert stale == "unknown (beyond 100 planned, stale)"


def test_the_assumption_in_words_for_every_basis():
    assert assumption_text("limit", "", 100, DAY) == (
        "rests on the declared limits of the running work it waits for"
    )
    assert assumption_text("estimate", "", 100, DAY) == (
        "rests on learned runtime estimates of the running work it waits for"
    )
    assert assumption_text("now", "", 100, DAY).startswith("fits now")
    assert assumption_text("unknown", "window", 100, DAY) == "no start within the next 1d00h window"
    assert assumption_text("unknown", "depth", 40, DAY) == (
        "beyond the 40 groups planned: no start is estimated"
    )


def test_the_describe_line_gives_the_point_the_interval_and_the_assumption():
    at = NOW + 2 * 3600 * S
    line = start_line(at, at - 600 * S, at + 1800 * S, "limit", "", NOW, **BOUNDS)
    assert line == (
        "2027-01-15T10:00:00Z (in 2h00m); 4 in 5 starts between in 1h50m and in 2h30m; "
        "rests on the declared limits of the running work it waits for"
    )
    assert start_line(at, at, at, "estimate", "", NOW, **BOUNDS) == (
        "2027-01-15T10:00:00Z (in 2h00m); "
        "rests on learned runtime estimates of the running work it waits for"
    )
    unbounded = interval_text(at, None, NOW)
    assert unbounded == "between in 2h00m and an unbounded later time"
    assert start_line(None, None, None, "unknown", "window", NOW, **BOUNDS) == (
        "unknown: no start within the next 1d00h window"
    )


def test_freshness_names_the_position_the_age_and_why_it_is_stale():
    assert freshness_text(41, NOW - 3 * S, NOW, None) == "planned at log position 41, 3.0s ago"
    stale = freshness_text(41, NOW - 3 * S, NOW, "2 log events newer than the plan")
    assert stale == "planned at log position 41, 3.0s ago; stale: 2 log events newer than the plan"


DURATION = r"(\d+(d\d\dh|h\d\dm|m\d\ds|s)|\d+\.\ds|\d+ms|\d+us|<1us)"  # timefmt.duration
CELL = re.compile(
    r"now( \(stale\))?"
    rf"|(now|in {DURATION}) \((limit|estimate)(, stale)?\)"
    rf"|unknown \(beyond (\d+ planned|{DURATION})(, stale)?\)"
)


@settings(max_examples=300)
@given(
    start=st.one_of(st.none(), st.integers(0, 2 * DAY)),
    basis=st.sampled_from(["now", "limit", "estimate", "unknown"]),
    unplanned=st.sampled_from(["window", "depth"]),
    stale=st.booleans(),
    depth=st.integers(1, 1000),
    window=st.integers(S, 7 * DAY),
)
def test_every_cell_is_one_of_the_documented_forms(start, basis, unplanned, stale, depth, window):
    start_ns = None if start is None or basis == "unknown" else NOW - DAY + start
    cell = start_cell(
        start_ns, basis if start_ns is not None else "unknown", unplanned, NOW,
        depth=depth, window_ns=window, stale=stale,
    )  # fmt: skip
    assert CELL.fullmatch(cell), cell
    assert str(NOW) not in cell and (start_ns is None or str(start_ns) not in cell)
