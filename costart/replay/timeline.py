"""`replay timeline NAME`: the states of each member over time, and the group's events.

`group_timeline` computes the lanes (one per member, plus the group) by folding the
group's events, and the markers (failures, restarts, timeouts) on their lanes;
`costart.replay.timeline_html.render_html` draws them as one self-contained page.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from costart.display import reason_text
from costart.domain import events as ev
from costart.domain.errors import NotFound
from costart.domain.world import World
from costart.projections import event_detail
from costart.replay.source import ReplaySource

MarkerKind = Literal["failure", "restart", "timeout", "cancel", "scale"]


class Span(msgspec.Struct, frozen=True):
    state: str
    start_ns: int
    end_ns: int | None  # None: still in this state at the end of the log


class Lane(msgspec.Struct):
    name: str
    spans: list[Span]


class TimelineEvent(msgspec.Struct, frozen=True):
    position: int
    at_ns: int
    aggregate: str
    event: str
    detail: str  # ends "(by ACTOR)" when an actor did it
    actor: str | None = None


class Marker(msgspec.Struct, frozen=True):
    """A moment worth seeing on a lane: a failure, a restart, a timeout, a cancel or a
    scale change."""

    lane: str
    at_ns: int
    kind: MarkerKind
    label: str


class Timeline(msgspec.Struct):
    group: str
    start_ns: int
    end_ns: int
    lanes: list[Lane]
    events: list[TimelineEvent]
    markers: list[Marker] = msgspec.field(default_factory=list)


def _detail(event: ev.DomainEvent) -> str:
    """The event in words, as `costart events` shows it (a reason with its times)."""
    text = (
        reason_text(event.reason, event.at_ns)
        if isinstance(event, ev.PendReasonChanged)
        else event_detail(event)
    )
    # Who did it, as `events` shows it ("user:alice").
    return text if event.actor is None else f"{text} (by {event.actor})"


def marker_kind(event: ev.DomainEvent) -> MarkerKind | None:
    """Which marker an event puts on its lane, if any."""
    match event:
        case ev.MemberFailed() | ev.ClaimFailed() | ev.GroupFailed():
            return "failure"
        case ev.MemberRestarted() | ev.GroupRestarted():
            return "restart"
        case ev.ReservationTimedOut() | ev.BarrierTimedOut():
            return "timeout"
        case ev.GroupCancelled():
            return "cancel"
        case ev.MemberScaled():
            return "scale"
        case _:
            return None


def _close(lane: Lane, state: str, at_ns: int) -> None:
    if lane.spans and lane.spans[-1].state == state:
        return
    if lane.spans:
        last = lane.spans[-1]
        lane.spans[-1] = Span(last.state, last.start_ns, at_ns)
    lane.spans.append(Span(state, at_ns, None))


def group_timeline(source: ReplaySource, name: str) -> Timeline:
    """Lanes and events of the newest group named ``name`` in the log."""
    world = World()
    events = list(source.read_events())
    for _, event in events:
        world.apply(event)
    try:
        target = world.group_named(name)
    except NotFound:
        raise NotFound(f"no group named {name!r} in the log") from None
    replay = World()
    lanes: dict[str, Lane] = {"group": Lane("group", [])}
    rows: list[TimelineEvent] = []
    markers: list[Marker] = []
    for position, event in events:
        replay.apply(event)
        if event.group_id != target.id:
            continue
        group = replay.group_by_id(target.id)
        _close(lanes["group"], group.status, event.at_ns)
        for member_id in group.member_ids:
            member = replay.members.get(str(member_id))
            if member is None:
                continue  # created by a later event of the same submission
            lane = lanes.setdefault(member.name, Lane(member.name, []))
            _close(lane, member.status, event.at_ns)
        is_group = event.originator_id == target.id
        aggregate = "group" if is_group else replay.member_by_id(event.originator_id).name
        detail = _detail(event)
        actor = None if event.actor is None else str(event.actor)
        rows.append(
            TimelineEvent(position, event.at_ns, aggregate, type(event).__name__, detail, actor)
        )
        kind = marker_kind(event)
        if kind is not None:
            label = f"{aggregate}: {type(event).__name__}" + (f" ({detail})" if detail else "")
            markers.append(Marker(aggregate, event.at_ns, kind, label))
    start = rows[0].at_ns if rows else 0
    end = max(rows[-1].at_ns if rows else 0, start + 1)
    ordered = [lanes["group"]] + [
        lanes[m.name] for m in replay.members_of(target) if m.name in lanes
    ]
    return Timeline(
        group=name, start_ns=start, end_ns=end, lanes=ordered, events=rows, markers=markers
    )
