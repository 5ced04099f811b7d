"""Times and durations as people read them: two units, ISO-8601 UTC, relative forms."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from costart.display import clock, duration, moment, offset, relative, rfc3339
from costart.display.timefmt import DAY_NS, HOUR_NS, MINUTE_NS, MS, SECOND_NS, US

WALL = 1_796_134_690_000_000_000  # 2026-12-01T14:18:10Z


@pytest.mark.parametrize(
    ("ns", "text"),
    [
        (0, "0s"),
        (1, "<1us"),
        (999, "<1us"),
        (US, "1us"),
        (850 * US, "850us"),
        (850 * MS, "850ms"),
        (SECOND_NS, "1.0s"),
        (4 * SECOND_NS + 250 * MS, "4.2s"),
        (45 * SECOND_NS, "45s"),
        (4 * MINUTE_NS + 20 * SECOND_NS, "4m20s"),
        (4 * MINUTE_NS + 5 * SECOND_NS, "4m05s"),
        (HOUR_NS + 6 * MINUTE_NS + 17 * SECOND_NS + 246 * MS + 850 * US + 22, "1h06m"),
        (2 * DAY_NS + 3 * HOUR_NS + 59 * MINUTE_NS, "2d03h"),
        (-(27 * SECOND_NS), "-27s"),
    ],
)
def test_durations_are_two_units_rounded_down(ns: int, text: str) -> None:
    assert duration(ns) == text


@given(st.integers(min_value=0, max_value=400 * DAY_NS))
def test_a_duration_never_shows_more_than_two_units_or_raw_nanoseconds(ns: int) -> None:
    text = duration(ns)
    units = [c for c in text if c.isalpha()]
    assert len("".join(units).replace("ms", "m").replace("us", "u").replace("ns", "n")) <= 2
    assert not text.endswith("ns")


def test_wall_clock_times_are_iso_8601_utc_and_virtual_ones_offsets() -> None:
    assert clock(WALL) == "2026-12-01T14:18:10Z"
    assert clock(WALL + 250 * MS) == "2026-12-01T14:18:10.250Z"
    assert clock(0) == "t+0s"
    assert clock(HOUR_NS + 6 * MINUTE_NS) == "t+1h06m"


def test_relative_times_say_in_or_ago() -> None:
    assert relative(WALL + 27 * SECOND_NS, WALL) == "in 27s"
    assert relative(WALL - 4 * MINUTE_NS - 20 * SECOND_NS, WALL) == "4m20s ago"
    assert relative(WALL, WALL) == "now"
    assert moment(WALL + 40 * SECOND_NS, WALL) == "2026-12-01T14:18:50Z (in 40s)"
    assert offset(WALL + 90 * SECOND_NS, WALL) == "+1m30s"


def test_rfc3339_keeps_every_nanosecond() -> None:
    assert rfc3339(WALL + 123_456_789) == "2026-12-01T14:18:10.123456789Z"
    assert rfc3339(0) == "1970-01-01T00:00:00.000000000Z"


def test_diff_values_are_whole_and_readable() -> None:
    from costart.replay.diff import value_text

    long = ["trainer/dataset", "trainer/gpus", "rollout/gpus", "reward/gpus", "reward/weights"]
    assert value_text("pend_reason.need", long) == json.dumps(long, separators=(",", ":"))
    assert value_text("retry_at_ns", WALL) == "2026-12-01T14:18:10Z"
    assert value_text("attempt", 3) == "3"
    assert value_text("placed_at_ns", None) == "-"


@pytest.mark.parametrize(
    ("text", "ns"),
    [("0.5s", 500 * MS), ("1m30.25s", 90 * SECOND_NS + 250 * MS), ("90s", 90 * SECOND_NS)],
)
def test_replay_offsets_may_be_fractional(text: str, ns: int) -> None:
    from costart.replay.points import parse_offset_ns

    assert parse_offset_ns(text) == ns
    assert parse_offset_ns("0.5") is None and parse_offset_ns("s") is None
