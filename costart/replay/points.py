"""Points in a log's history as a user writes them: ``--at 1234`` (a log position),
``--at 90s``, ``--at +0.5s`` or ``--at 1m30.25s`` (that long after the origin of the
command's `TimeBase`: the group's submission, or the log's first event),
``--at @1764428400000000000`` (controller time in ns) or ``--at 2026-11-29T16:00:00Z``
(controller time as UTC)."""

from __future__ import annotations

import re
from datetime import datetime
from decimal import Decimal
from typing import Final

import msgspec

from costart.domain.errors import DomainError
from costart.replay.source import ReplaySource

_UNIT_NS: Final = {
    "ns": 1,
    "us": 10**3,
    "ms": 10**6,
    "s": 10**9,
    "m": 60 * 10**9,
    "h": 3600 * 10**9,
}
_PART: Final = re.compile(r"(\d+(?:\.\d+)?)(ns|us|ms|s|m|h)")
_OFFSET: Final = re.compile(r"(?:\d+(?:\.\d+)?(?:ns|us|ms|s|m|h))+")


def parse_offset_ns(text: str) -> int | None:
    """An offset such as ``90s``, ``0.5s`` or ``1m30.25s`` in whole nanoseconds (exact
    decimal arithmetic, rounded down), or None if ``text`` is not one."""
    if not _OFFSET.fullmatch(text):
        return None
    total = sum(Decimal(n) * _UNIT_NS[unit] for n, unit in _PART.findall(text))
    return int(total)


class Point(msgspec.Struct, frozen=True):
    position: int | None = None
    at_ns: int | None = None


def parse_point(text: str, source: ReplaySource, origin_ns: int | None = None) -> Point:
    """A position or a controller time; raises `DomainError` naming the accepted forms.
    An offset counts from ``origin_ns`` (default: the log's first event)."""
    text = text.strip()
    if text.isdigit():
        return Point(position=int(text))
    if text.startswith("@") and text[1:].isdigit():
        return Point(at_ns=int(text[1:]))
    offset = parse_offset_ns(text.removeprefix("+"))
    if offset is not None:
        if origin_ns is None:
            first = next(iter(source.read_events(after=0, until=1)), None)
            origin_ns = first[1].at_ns if first else 0
        return Point(at_ns=origin_ns + offset)
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise DomainError(
            f"bad point {text!r}: use a position (1234), an offset (+90s, 0.5s), "
            "controller time in ns (@1764428400000000000) or an ISO time (2026-11-29T16:00:00Z)"
        ) from None
    if moment.tzinfo is None:
        raise DomainError(f"bad point {text!r}: give a time zone (e.g. Z)")
    return Point(at_ns=int(moment.timestamp()) * 10**9 + moment.microsecond * 1000)
