"""`replay why NAME --at TIME`: the group's pend reason then, and how it got there."""

from __future__ import annotations

import msgspec

from costart.display import clock, offset
from costart.domain import events as ev
from costart.domain.errors import NotFound
from costart.domain.events import PendReason
from costart.replay.rebuild import rebuild_until_time
from costart.replay.source import ReplaySource
from costart.replay.time_base import log_span, time_base


class ReasonChange(msgspec.Struct, frozen=True):
    position: int
    at_ns: int
    reason: PendReason


class WhyAnswer(msgspec.Struct, frozen=True):
    group: str
    at_ns: int
    status: str
    reason: PendReason | None
    history: list[ReasonChange]
    last_event: str | None


def _not_yet(source: ReplaySource, name: str, at_ns: int) -> str:
    """Why there was no such group then, naming when it was submitted (if ever)."""
    span = log_span(source, name)
    base = time_base(span, None)

    def when(ns: int) -> str:
        return f"{clock(ns)} ({offset(ns, base.origin_ns)} from the log's first event)"

    said = f"no group named {name!r} existed at {when(at_ns)}"
    if span.submitted_ns is None:
        return f"{said}; the log never had one"
    return f"{said}; it was submitted at {when(span.submitted_ns)}"


def why(source: ReplaySource, name: str, at_ns: int) -> WhyAnswer:
    """The state and pend reason of the newest group named ``name`` submitted by ``at_ns``."""
    world = rebuild_until_time(source, at_ns)
    try:
        group = world.group_named(name)
    except NotFound:
        raise NotFound(_not_yet(source, name, at_ns)) from None
    history: list[ReasonChange] = []
    last_event: str | None = None
    for position, event in source.read_events(until=world.position):
        if event.group_id != group.id:
            continue
        last_event = type(event).__name__
        if isinstance(event, ev.PendReasonChanged):
            history.append(ReasonChange(position, event.at_ns, event.reason))
    return WhyAnswer(
        group=name,
        at_ns=at_ns,
        status=group.status,
        reason=group.pend_reason,
        history=history,
        last_event=last_event,
    )
