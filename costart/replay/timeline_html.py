"""The HTML timeline: one self-contained page (inline SVG and CSS, no scripts, nothing
fetched), so it opens offline and can be attached to an incident report.

A lane per member (and one for the group) coloured by state, one colour per state; a
time axis with ticks at a round step, labelled as offsets from the first event (whose
clock time heads the page); markers on their lanes for failures (red triangle),
restarts (purple circle), timeouts (orange diamond), cancels (black cross) and scale
changes (blue bar), each with a tooltip; then the events in words. Markers carry
``class="marker marker-KIND"`` so a test can count them. The plot runs a tenth past the
last event, so each lane's end state is a visible bar named in words (not a sliver).
`lanes_svg` is the drawing alone: the board's group page shows the same one.
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
MARKER_COLOURS: Final = {
    "failure": "#d7191c",
    "restart": "#6a1b9a",
    "timeout": "#ef6c00",
    "cancel": "#111111",
    "scale": "#1565c0",
}
MARKER_SHAPES: Final = {"failure": "▲", "restart": "●", "timeout": "◆", "cancel": "✖", "scale": "▮"}
_WIDTH, _LANE, _LABEL, _AXIS = 1100, 30, 130, 34
# From the lane's top: each kind at its own height.
_MARKER_ROW: Final = {"failure": 7, "restart": 17, "timeout": 12, "cancel": 12, "scale": 12}
_TAIL: Final = 10  # the plot runs span/_TAIL past the last event: the end states show
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
    if m.kind == "cancel":
        cross = f"M{x - 6:.1f},{y - 6:.1f} L{x + 6:.1f},{y + 6:.1f} M{x + 6:.1f},{y - 6:.1f} L{x - 6:.1f},{y + 6:.1f}"
        return f'<path d="{cross}" {attrs} stroke="{colour}" stroke-width="3">{title}</path>'
    if m.kind == "scale":
        return (
            f'<rect x="{x - 2.5:.1f}" y="{y - 9:.1f}" width="5" height="18" {attrs}>{title}</rect>'
        )
    points = f"{x:.1f},{y - 9:.1f} {x + 8:.1f},{y:.1f} {x:.1f},{y + 9:.1f} {x - 8:.1f},{y:.1f}"
    return f'<polygon points="{points}" {attrs}>{title}</polygon>'


def legend() -> str:
    """The state colours and marker shapes, as two lines of HTML (styled by classes, no
    inline style: the board's Content-Security-Policy allows none)."""
    states = "".join(f'<span class="key key-{s}">{s}</span>' for s in STATE_COLOURS)
    marks = "".join(
        f'<span class="mark mark-{k}">{MARKER_SHAPES[k]} {k}</span>' for k in MARKER_COLOURS
    )
    return f'<p class="legend">{states}</p><p class="legend">{marks}</p>'


def legend_css() -> str:
    """The legend's colours as CSS rules."""
    keys = "".join(f".key-{s} {{ background: {c}; }}\n" for s, c in STATE_COLOURS.items())
    marks = "".join(f".mark-{k} {{ color: {c}; }}\n" for k, c in MARKER_COLOURS.items())
    return keys + marks


def lanes_svg(timeline: Timeline) -> str:
    """The lanes, markers and time axis as one ``<svg>`` element (no scripts)."""
    last_ns = max(timeline.end_ns - timeline.start_ns, 1)
    span_ns = last_ns + max(last_ns // _TAIL, _NS_PER_S)
    plot = _WIDTH - _LABEL - 20
    view_end = timeline.start_ns + span_ns

    def x(at_ns: int) -> float:
        return _LABEL + (at_ns - timeline.start_ns) * plot / span_ns

    parts: list[str] = []
    lane_y: dict[str, int] = {}
    for row, lane in enumerate(timeline.lanes):
        y = 10 + row * _LANE
        lane_y[lane.name] = y
        parts.append(f'<text x="4" y="{y + 18}" class="lane">{html.escape(lane.name)}</text>')
        for span in lane.spans:
            is_end = span.end_ns is None
            end = view_end if span.end_ns is None else span.end_ns
            x0, x1 = x(span.start_ns), x(end)
            colour = STATE_COLOURS.get(span.state, "#999999")
            held = "since" if is_end else "for"
            shown = offset(span.start_ns, timeline.start_ns)
            length = "the end of the log" if is_end else duration(end - span.start_ns)
            title = f"{lane.name}: {span.state} from {shown} {held} {length}"
            end_attr = ' data-end="1"' if is_end else ""
            parts.append(
                f'<rect class="span" data-state="{span.state}"{end_attr} x="{x0:.1f}" y="{y}" '
                f'width="{max(x1 - x0, 1.5):.1f}" height="{_LANE - 6}" fill="{colour}">'
                f"<title>{html.escape(title)}</title></rect>"
            )
            if is_end:  # the end state in words, on its bar
                parts.append(
                    f'<text class="end-state" x="{x1 - 4:.1f}" y="{y + 16}" '
                    f'text-anchor="end">{span.state}</text>'
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
    return (
        f'<svg class="lanes" width="{_WIDTH}" height="{height}" '
        f'xmlns="http://www.w3.org/2000/svg">{"".join(parts)}</svg>'
    )


def render_html(timeline: Timeline) -> str:
    """One self-contained page: lanes, markers and a time axis in SVG; then the events."""
    span_ns = max(timeline.end_ns - timeline.start_ns, 1)
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
svg .end-state {{ font-size: 11px; fill: white; text-shadow: 0 0 2px #000; }}
{legend_css()}
</style></head><body>
<h1>Group {name}</h1>
<p>{len(timeline.events)} events over {duration(span_ns)}, from {clock(timeline.start_ns)};
times below are offsets from then. {len(timeline.markers)} markers.</p>
{legend()}
{lanes_svg(timeline)}
<h2>Events</h2>
<table><tr><th>position</th><th>time</th><th>lane</th><th>event</th><th>detail</th></tr>
{rows}
</table></body></html>
"""
