"""The HTML timeline: one self-contained page (inline SVG and CSS, no scripts, nothing
fetched), so it opens offline and can be attached to an incident report.

A lane per member (and one for the group) coloured by state, one colour per state; a
time axis with ticks at a round step, labelled as offsets from the first event (whose
clock time heads the page); markers on their lanes for failures (red triangle),
restarts (purple circle) and timeouts (orange diamond), each with a tooltip; then the
events in words. Markers carry ``class="marker marker-KIND"`` so a test can count them.
"""

from __future__ import annotations

import html
from typing import Final

from costart.display import clock, duration, offset
from costart.replay.timeline import Marker, Timeline

STATE_COLOURS: Final = {
    "PENDING": "#c9ccd1",
    "RESERVING": "#f2c14e",
    "HELD": "#5fc4b8",
    "PLACED": "#7fb7e6",
    "READY": "#2f6fb5",
    "RUNNING": "#3fa34d",
    "DEGRADED": "#e0892f",
    "RESTARTING": "#b57edc",
    "SUCCEEDED": "#1f5f2a",
    "FAILED": "#c0392b",
    "STOPPED": "#7f8c8d",
    "CANCELLED": "#3b3b3b",
}
MARKER_COLOURS: Final = {"failure": "#d7191c", "restart": "#6a1b9a", "timeout": "#ef6c00"}
_WIDTH, _LANE, _LABEL, _AXIS = 1100, 30, 130, 34
_MARKER_ROW: Final = {"failure": 7, "restart": 17, "timeout": 12}  # from the lane's top
_NS_PER_S: Final = 10**9
# Round tick steps, the first that gives at most _MAX_TICKS ticks is used.
_STEPS_S: Final = (
    1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400,
)  # fmt: skip
_MAX_TICKS: Final = 10


def tick_step_ns(span_ns: int) -> int:
    """The round step that divides ``span_ns`` into at most `_MAX_TICKS` ticks."""
    for step in _STEPS_S:
        if span_ns // (step * _NS_PER_S) <= _MAX_TICKS:
            return step * _NS_PER_S
    days = span_ns // (86400 * _NS_PER_S * _MAX_TICKS) + 1
    return days * 86400 * _NS_PER_S


def _marker(m: Marker, x: float, y: float) -> str:
    colour = MARKER_COLOURS[m.kind]
    title = f"<title>{html.escape(m.label)}</title>"
    attrs = f'class="marker marker-{m.kind}" data-lane="{html.escape(m.lane)}" fill="{colour}"'
    attrs += ' stroke="white" stroke-width="1.5"'
    if m.kind == "failure":
        points = f"{x:.1f},{y - 7:.1f} {x + 7:.1f},{y + 5:.1f} {x - 7:.1f},{y + 5:.1f}"
        return f'<polygon points="{points}" {attrs}>{title}</polygon>'
    if m.kind == "restart":
        return f'<circle cx="{x:.1f}" cy="{y:.1f}" r="6" {attrs}>{title}</circle>'
    points = f"{x:.1f},{y - 9:.1f} {x + 8:.1f},{y:.1f} {x:.1f},{y + 9:.1f} {x - 8:.1f},{y:.1f}"
    return f'<polygon points="{points}" {attrs}>{title}</polygon>'


def _legend() -> str:
    states = "".join(
        f'<span class="key" style="background:{c}">{s}</span>' for s, c in STATE_COLOURS.items()
    )
    shapes = {"failure": "▲", "restart": "●", "timeout": "◆"}
    marks = "".join(
        f'<span class="mark" style="color:{MARKER_COLOURS[k]}">{shapes[k]} {k}</span>'
        for k in MARKER_COLOURS
    )
    return f'<p class="legend">{states}</p><p class="legend">{marks}</p>'


def render_html(timeline: Timeline) -> str:
    """One self-contained page: lanes, markers and a time axis in SVG; then the events."""
    span_ns = max(timeline.end_ns - timeline.start_ns, 1)
    plot = _WIDTH - _LABEL - 20

    def x(at_ns: int) -> float:
        return _LABEL + (at_ns - timeline.start_ns) * plot / span_ns

    parts: list[str] = []
    lane_y: dict[str, int] = {}
    for row, lane in enumerate(timeline.lanes):
        y = 10 + row * _LANE
        lane_y[lane.name] = y
        parts.append(f'<text x="4" y="{y + 18}" class="lane">{html.escape(lane.name)}</text>')
        for span in lane.spans:
            end = span.end_ns if span.end_ns is not None else timeline.end_ns
            x0, x1 = x(span.start_ns), x(end)
            colour = STATE_COLOURS.get(span.state, "#999999")
            title = (
                f"{lane.name}: {span.state} from {offset(span.start_ns, timeline.start_ns)}"
                f" for {duration(end - span.start_ns)}"
            )
            parts.append(
                f'<rect class="span" data-state="{span.state}" x="{x0:.1f}" y="{y}" '
                f'width="{max(x1 - x0, 1.5):.1f}" height="{_LANE - 6}" fill="{colour}">'
                f"<title>{html.escape(title)}</title></rect>"
            )
    axis_y = 10 + len(timeline.lanes) * _LANE + 4
    parts.append(
        f'<line class="axis" x1="{_LABEL}" y1="{axis_y}" x2="{_LABEL + plot}" y2="{axis_y}" '
        'stroke="#333"/>'
    )
    step = tick_step_ns(span_ns)
    for k in range(span_ns // step + 1):
        at = timeline.start_ns + k * step
        tx = x(at)
        parts.append(
            f'<line class="tick" x1="{tx:.1f}" y1="10" x2="{tx:.1f}" y2="{axis_y + 5}" '
            'stroke="#000" stroke-opacity="0.12"/>'
            f'<text class="tick-label" x="{tx:.1f}" y="{axis_y + 20}" text-anchor="middle">'
            f"{offset(at, timeline.start_ns)}</text>"
        )
    for m in timeline.markers:
        top = lane_y.get(m.lane)
        if top is not None:
            # Each kind at its own height, so a failure and the restart it caused (the
            # same instant) are both visible.
            parts.append(_marker(m, x(m.at_ns), top + _MARKER_ROW[m.kind]))
    height = axis_y + _AXIS
    rows = "\n".join(
        f"<tr><td>{e.position}</td><td>{offset(e.at_ns, timeline.start_ns)}</td>"
        f"<td>{html.escape(e.aggregate)}</td><td>{e.event}</td><td>{html.escape(e.detail)}</td></tr>"
        for e in timeline.events
    )
    name = html.escape(timeline.group)
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>costart timeline: {name}</title>
<style>
body {{ font-family: sans-serif; margin: 1.5em; color: #222; }}
svg text {{ font-size: 13px; }} svg .tick-label {{ font-size: 11px; fill: #444; }}
table {{ border-collapse: collapse; font-size: 13px; }}
td, th {{ border: 1px solid #ddd; padding: 2px 6px; text-align: left; }}
.key {{ color: white; padding: 1px 5px; margin-right: 3px; font-size: 12px;
        text-shadow: 0 0 2px #000; }}
.mark {{ margin-right: 12px; font-size: 13px; }}
</style></head><body>
<h1>Group {name}</h1>
<p>{len(timeline.events)} events over {duration(span_ns)}, from {clock(timeline.start_ns)};
times below are offsets from then. {len(timeline.markers)} markers.</p>
{_legend()}
<svg width="{_WIDTH}" height="{height}" xmlns="http://www.w3.org/2000/svg">{"".join(parts)}</svg>
<h2>Events</h2>
<table><tr><th>position</th><th>time</th><th>lane</th><th>event</th><th>detail</th></tr>
{rows}
</table></body></html>
"""
