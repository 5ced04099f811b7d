"""`replay timeline NAME`: the states of each member over time, and the group's events.

`group_timeline` computes the lanes (one per member, plus the group) by folding the
group's events; `render_html` draws them as one self-contained HTML page (inline SVG and
CSS, no scripts or external files), so it can be attached to an incident report.
"""

from __future__ import annotations

import html

import msgspec

from costart.domain import events as ev
from costart.domain.errors import NotFound
from costart.domain.world import World
from costart.replay.source import EventSource


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
    detail: str


class Timeline(msgspec.Struct):
    group: str
    start_ns: int
    end_ns: int
    lanes: list[Lane]
    events: list[TimelineEvent]


def _detail(event: ev.DomainEvent) -> str:
    fields = msgspec.structs.asdict(event)
    for key in ("originator_id", "originator_version", "group_id", "at_ns", "spec", "member_ids"):
        fields.pop(key, None)
    if event.actor is not None:
        fields["actor"] = str(event.actor)  # "user:alice", as `events` shows it
    return ", ".join(f"{k}={v}" for k, v in fields.items() if v not in (None, (), []))


def _close(lane: Lane, state: str, at_ns: int) -> None:
    if lane.spans and lane.spans[-1].state == state:
        return
    if lane.spans:
        last = lane.spans[-1]
        lane.spans[-1] = Span(last.state, last.start_ns, at_ns)
    lane.spans.append(Span(state, at_ns, None))


def group_timeline(source: EventSource, name: str) -> Timeline:
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
        rows.append(
            TimelineEvent(position, event.at_ns, aggregate, type(event).__name__, _detail(event))
        )
    start = rows[0].at_ns if rows else 0
    end = max(rows[-1].at_ns if rows else 0, start + 1)
    ordered = [lanes["group"]] + [
        lanes[m.name] for m in replay.members_of(target) if m.name in lanes
    ]
    return Timeline(group=name, start_ns=start, end_ns=end, lanes=ordered, events=rows)


_COLOURS = {
    "PENDING": "#c9ccd1",
    "RESERVING": "#f2c14e",
    "HELD": "#f2c14e",
    "PLACED": "#7fb7e6",
    "READY": "#4f94d4",
    "RUNNING": "#3fa34d",
    "DEGRADED": "#e0892f",
    "RESTARTING": "#b57edc",
    "SUCCEEDED": "#1f6f2f",
    "FAILED": "#c0392b",
    "STOPPED": "#7f8c8d",
    "CANCELLED": "#555555",
}
_WIDTH, _LANE, _LABEL = 1000, 28, 120


def _seconds(ns: int) -> str:
    return f"{ns / 1e9:.1f}s"


def render_html(timeline: Timeline) -> str:
    """One self-contained page: an SVG with a lane per member, then the event table."""
    span_ns = timeline.end_ns - timeline.start_ns

    def x(at_ns: int) -> float:
        return _LABEL + (at_ns - timeline.start_ns) * (_WIDTH - _LABEL) / span_ns

    parts = []
    for row, lane in enumerate(timeline.lanes):
        y = 10 + row * _LANE
        parts.append(f'<text x="4" y="{y + 17}">{html.escape(lane.name)}</text>')
        for span in lane.spans:
            x0, x1 = (
                x(span.start_ns),
                x(span.end_ns if span.end_ns is not None else timeline.end_ns),
            )
            colour = _COLOURS.get(span.state, "#999999")
            title = f"{lane.name}: {span.state} from {_seconds(span.start_ns - timeline.start_ns)}"
            parts.append(
                f'<rect x="{x0:.1f}" y="{y}" width="{max(x1 - x0, 1.5):.1f}" height="{_LANE - 6}" '
                f'fill="{colour}"><title>{html.escape(title)}</title></rect>'
            )
    height = 20 + len(timeline.lanes) * _LANE
    legend = " ".join(
        f'<span class="key" style="background:{c}">{s}</span>' for s, c in _COLOURS.items()
    )
    rows = "\n".join(
        f"<tr><td>{e.position}</td><td>{_seconds(e.at_ns - timeline.start_ns)}</td>"
        f"<td>{html.escape(e.aggregate)}</td><td>{e.event}</td><td>{html.escape(e.detail)}</td></tr>"
        for e in timeline.events
    )
    return f"""<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>costart timeline: {html.escape(timeline.group)}</title>
<style>
body {{ font-family: sans-serif; margin: 1.5em; }} svg text {{ font-size: 13px; }}
table {{ border-collapse: collapse; font-size: 13px; }} td, th {{ border: 1px solid #ddd; padding: 2px 6px; }}
.key {{ color: white; padding: 1px 5px; margin-right: 3px; font-size: 12px; }}
</style></head><body>
<h1>Group {html.escape(timeline.group)}</h1>
<p>{len(timeline.events)} events over {_seconds(span_ns)}. {legend}</p>
<svg width="{_WIDTH}" height="{height}" xmlns="http://www.w3.org/2000/svg">{"".join(parts)}</svg>
<h2>Events</h2>
<table><tr><th>position</th><th>t</th><th>aggregate</th><th>event</th><th>detail</th></tr>
{rows}
</table></body></html>
"""
