"""Durations as written in specs ("15m", "1h30m", "500ms") parsed to integer nanoseconds."""

from __future__ import annotations

import re

_UNIT_NS = {"ns": 1, "us": 10**3, "ms": 10**6, "s": 10**9, "m": 60 * 10**9, "h": 3600 * 10**9}
_PART = re.compile(r"([0-9]+)(ns|us|ms|s|m|h)")
_WHOLE = re.compile(r"(?:[0-9]+(?:ns|us|ms|s|m|h))+")  # matched whole: no "15m\n"


def parse_duration_ns(text: str) -> int:
    """Parse ``text`` such as ``"1h30m"`` into nanoseconds.

    Raises ``ValueError`` with a message naming the problem; ``"0s"`` is allowed.
    """
    if not _WHOLE.fullmatch(text):
        raise ValueError(
            f"bad duration {text!r}: expected an integer with a unit (ns, us, ms, s, m, h), "
            "e.g. '90s' or '1h30m'"
        )
    return sum(int(n) * _UNIT_NS[unit] for n, unit in _PART.findall(text))


def format_duration_ns(ns: int) -> str:
    """The shortest readable form of ``ns`` (``5400s`` -> ``1h30m``)."""
    if ns == 0:
        return "0s"
    parts = []
    for unit in ("h", "m", "s", "ms", "us", "ns"):
        size = _UNIT_NS[unit]
        if ns >= size:
            parts.append(f"{ns // size}{unit}")
            ns %= size
    return "".join(parts)
