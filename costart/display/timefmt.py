"""Times and durations as people read them (no raw nanoseconds in human output).

* `duration`: at most two units, rounded down: ``1h06m``, ``4m20s``, ``4.2s``, ``850ms``;
  under a microsecond ``<1us``.
* `clock`: a controller time. Wall-clock times are ISO-8601 UTC
  (``2026-12-01T14:56:25Z``); a virtual clock's (the simulator's starts at 0, far
  before `WALL_CLOCK_FLOOR_NS`) is an offset from its start (``t+1h06m``).
* `relative` / `moment`: ``in 27s``, ``4m20s ago``; ``<clock> (in 27s)``.
* `rfc3339`: the full-precision string REST puts beside its integer ``*_ns`` fields.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Final

US: Final = 1_000
MS: Final = 1_000_000
SECOND_NS: Final = 1_000_000_000
MINUTE_NS: Final = 60 * SECOND_NS
HOUR_NS: Final = 60 * MINUTE_NS
DAY_NS: Final = 24 * HOUR_NS

WALL_CLOCK_FLOOR_NS: Final = 10**18
"""2001-09-09: a controller time before this is a virtual clock's, not the wall's."""

# (unit size, unit name, next unit size, next unit name, digits of the next unit)
_TWO_UNITS: Final = (
    (DAY_NS, "d", HOUR_NS, "h", 2),
    (HOUR_NS, "h", MINUTE_NS, "m", 2),
    (MINUTE_NS, "m", SECOND_NS, "s", 2),
)


def duration(ns: int) -> str:
    """``ns`` in at most two units, rounded down (``-`` in front when negative)."""
    if ns < 0:
        return "-" + duration(-ns)
    if ns == 0:
        return "0s"
    for size, name, next_size, next_name, digits in _TWO_UNITS:
        if ns >= size:
            rest = (ns % size) // next_size
            return f"{ns // size}{name}{rest:0{digits}d}{next_name}"
    if ns >= 10 * SECOND_NS:
        return f"{ns // SECOND_NS}s"
    if ns >= SECOND_NS:
        tenths = (ns % SECOND_NS) // (SECOND_NS // 10)
        return f"{ns // SECOND_NS}.{tenths}s"
    for size, name in ((MS, "ms"), (US, "us")):
        if ns >= size:
            return f"{ns // size}{name}"
    return "<1us"  # below a microsecond nobody reads the digits: never raw nanoseconds


def is_virtual(ns: int) -> bool:
    """Whether ``ns`` is a virtual clock's time (the simulator's), not the wall's."""
    return ns < WALL_CLOCK_FLOOR_NS


def clock(ns: int) -> str:
    """A controller time: ISO-8601 UTC to the second (milliseconds when not whole), or
    ``t+<duration>`` on a virtual clock."""
    if is_virtual(ns):
        return f"t+{duration(ns)}"
    moment_ = datetime.fromtimestamp(ns // SECOND_NS, tz=UTC)
    text = moment_.strftime("%Y-%m-%dT%H:%M:%S")
    millis = (ns % SECOND_NS) // MS
    return f"{text}.{millis:03d}Z" if millis else f"{text}Z"


def relative(ns: int, now_ns: int) -> str:
    """``in 27s``, ``4m20s ago``, or ``now`` (under a millisecond either way)."""
    delta = ns - now_ns
    if abs(delta) < MS:
        return "now"
    return f"in {duration(delta)}" if delta > 0 else f"{duration(-delta)} ago"


def moment(ns: int, now_ns: int) -> str:
    """A controller time with its distance from ``now_ns``: ``<clock> (in 27s)``."""
    return f"{clock(ns)} ({relative(ns, now_ns)})"


def offset(ns: int, origin_ns: int) -> str:
    """A time as an offset from ``origin_ns``: ``+4m20s`` (``-`` before the origin)."""
    delta = ns - origin_ns
    return f"+{duration(delta)}" if delta >= 0 else duration(delta)


def rfc3339(ns: int) -> str:
    """``ns`` since the epoch as RFC 3339 UTC with nanoseconds (for machines)."""
    seconds, rest = divmod(ns, SECOND_NS)
    return f"{_utc_second(seconds)}.{rest:09d}Z"


@functools.lru_cache(maxsize=4096)
def _utc_second(seconds: int) -> str:
    # Cached: a REST answer shows several times, mostly of a few recent seconds, and
    # formatting a datetime costs ten times the lookup (ADR 0050).
    return datetime.fromtimestamp(seconds, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S")


def age_reference(event_times_ns: Iterable[int], wall_ns: int) -> int:
    """The one point ages and deadlines are measured to: ``wall_ns``, or for a log on a
    virtual clock the newest of ``event_times_ns`` (a simulation's log shows simulated
    ages). Callers pass the newest event times of the whole log, so every command that
    shows an age measures it from the same point."""
    newest = max(event_times_ns, default=wall_ns)
    return wall_ns if not is_virtual(newest) else newest
