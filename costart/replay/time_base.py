"""The one time base of the forensics commands: every time they print or read is either
absolute (ISO-8601 UTC) or an offset ``+90s`` from an origin, and the origin is the
group's submission whenever the command is about a group (as `describe` and the
timeline count), else the log's first event. Each output says which (`TimeBase.said`).
"""

from __future__ import annotations

import msgspec

from costart.display import clock, offset
from costart.domain import events as ev
from costart.replay.source import ReplaySource


class LogSpan(msgspec.Struct, frozen=True):
    """What one pass over the log tells about its times (and one group's submission)."""

    first_ns: int
    last_ns: int
    last_position: int
    submitted_ns: int | None  # the named group's first submission; None if never


def log_span(source: ReplaySource, group: str | None = None) -> LogSpan:
    first = last = position = 0
    submitted: int | None = None
    for at, event in source.read_events():
        if not position:  # the first event's time, even 0 (a simulator's clock starts there)
            first = event.at_ns
        position = at
        last = event.at_ns
        if (
            submitted is None
            and group is not None
            and isinstance(event, ev.GroupSubmitted)
            and event.spec.name == group
        ):
            submitted = event.at_ns
    return LogSpan(first_ns=first, last_ns=last, last_position=position, submitted_ns=submitted)


class TimeBase(msgspec.Struct, frozen=True):
    origin_ns: int
    what: str
    """What the origin is: ``grpo-003's submission`` or ``the log's first event``."""

    def said(self) -> str:
        """The line each output starts with."""
        return f"times: ISO-8601 UTC, and +offset from {self.what} at {clock(self.origin_ns)}"

    def at(self, ns: int) -> str:
        """A time in both forms: ``2026-11-29T16:02:00Z (+2m)``."""
        return f"{clock(ns)} ({offset(ns, self.origin_ns)})"


def time_base(span: LogSpan, group: str | None) -> TimeBase:
    """From the group's submission when a group is named and was submitted, else from
    the log's first event."""
    if group is not None and span.submitted_ns is not None:
        return TimeBase(span.submitted_ns, f"{group}'s submission")
    return TimeBase(span.first_ns, "the log's first event")
