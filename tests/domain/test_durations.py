"""Durations as written in specs, both ways: every unit parses to its size, the error
names the text and says what is expected, and the readable form is the shortest one."""

from __future__ import annotations

import pytest

from costart.domain.durations import format_duration_ns, parse_duration_ns

S = 10**9


@pytest.mark.parametrize(
    ("text", "ns"),
    [
        ("0s", 0),
        ("7ns", 7),
        ("7us", 7_000),
        ("7ms", 7_000_000),
        ("7s", 7 * S),
        ("7m", 420 * S),
        ("7h", 7 * 3600 * S),
        ("1h30m", 5400 * S),
        ("1m1s1ms1us1ns", 61 * S + 1_001_001),
        ("90s", 90 * S),
    ],
)
def test_every_unit_parses_to_its_size_and_parts_add_up(text: str, ns: int) -> None:
    assert parse_duration_ns(text) == ns


@pytest.mark.parametrize("text", ["", "15", "m", "15x", "1.5h", "-1s", " 1s", "1s ", "15m\n"])
def test_a_bad_duration_is_refused_naming_the_text_and_what_is_expected(text: str) -> None:
    with pytest.raises(ValueError) as refused:
        parse_duration_ns(text)
    assert str(refused.value) == (
        f"bad duration {text!r}: expected an integer with a unit (ns, us, ms, s, m, h), "
        "e.g. '90s' or '1h30m'"
    )


@pytest.mark.parametrize(
    ("ns", "text"),
    [
        (0, "0s"),
        (1, "1ns"),
        (999, "999ns"),
        (1_000, "1us"),
        (1_000_000, "1ms"),
        (S, "1s"),
        (59 * S, "59s"),
        (60 * S, "1m"),
        (3600 * S, "1h"),
        (5400 * S, "1h30m"),
        (90061 * S + 2_003_004, "25h1m1s2ms3us4ns"),
        (2 * 3600 * S + 5 * S, "2h5s"),
    ],
)
def test_the_readable_form_is_the_shortest_and_reads_back(ns: int, text: str) -> None:
    assert format_duration_ns(ns) == text
    assert parse_duration_ns(text) == ns
