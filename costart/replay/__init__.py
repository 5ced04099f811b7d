"""Forensics on a log opened read-only: rebuild, restore, verify, why, timeline, diff
and export (docs/design.md §7). Each backend opens its log for them
(`costart.eventlog.open_replay_log`); nothing here knows a backend."""

from costart._lazy import lazy_exports

__all__ = [
    "LogSpan",
    "Point",
    "RecorderSource",
    "TimeBase",
    "Timeline",
    "diff_worlds",
    "export_jsonl",
    "group_timeline",
    "lanes_svg",
    "legend",
    "legend_css",
    "log_span",
    "parse_point",
    "rebuild",
    "rebuild_until_time",
    "render_html",
    "time_base",
    "value_text",
    "verify",
    "why",
]

# Resolved on first use: importing one light module must not import the heavy ones.
__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "LogSpan": "costart.replay.time_base",
        "Point": "costart.replay.points",
        "TimeBase": "costart.replay.time_base",
        "log_span": "costart.replay.time_base",
        "time_base": "costart.replay.time_base",
        "RecorderSource": "costart.replay.source",
        "Timeline": "costart.replay.timeline",
        "diff_worlds": "costart.replay.diff",
        "export_jsonl": "costart.replay.export",
        "group_timeline": "costart.replay.timeline",
        "lanes_svg": "costart.replay.timeline_html",
        "legend": "costart.replay.timeline_html",
        "legend_css": "costart.replay.timeline_html",
        "parse_point": "costart.replay.points",
        "rebuild": "costart.replay.rebuild",
        "rebuild_until_time": "costart.replay.rebuild",
        "render_html": "costart.replay.timeline_html",
        "value_text": "costart.replay.diff",
        "verify": "costart.replay.rebuild_check",
        "why": "costart.replay.why",
    },
)
