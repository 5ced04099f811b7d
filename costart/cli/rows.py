"""The rows of the listed views as text cells: one definition of each column, shared
by the text tables of `get` (and its watch) and the rich tables of `describe`.

No rendering library here: `get` over ``--server`` prints these through
`costart.cli.text_table` (ADR 0078).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from costart import display
from costart.cli.estimated_rows import expected_start_cell
from costart.display import duration, offset, readable
from costart.projections.deadlines import open_deadlines

if TYPE_CHECKING:
    from costart.projections.models import GroupView, HoldView, MemberView, TimelineEntry


def age_text(ns: int | None) -> str:
    """An age or elapsed time: two units (``1h06m``), ``-`` when unknown."""
    return "-" if ns is None else duration(max(ns, 0))


def age_reference(groups: Sequence[GroupView], wall_ns: int) -> int:
    """The one point a command measures ages and deadlines to (see `costart.display`):
    pass every group of the log, so `get` and `describe` agree."""
    return display.age_reference((g.last_event_at_ns for g in groups), wall_ns)


def group_reason(g: GroupView, now_ns: int) -> str:
    return display.group_reason(g.state, g.pend_reason, g.last_reason, g.retry_at_ns, now_ns)


DEADLINE_LABELS = {
    "reservation": "reservation expires",
    "barrier": "barrier deadline",
    "retry": "retry",
    "estimate": "estimate runs out",
}


def deadlines(g: GroupView, now_ns: int) -> list[tuple[str, int]]:
    """The group's open deadlines (a retry only while it is ahead) with their labels."""
    return [
        (DEADLINE_LABELS[kind], at)
        for kind, at in open_deadlines(g)
        if kind != "retry" or at > now_ns
    ]


def deadline_text(g: GroupView, now_ns: int) -> str:
    """The first open deadline with the time left: ``barrier in 3m20s``."""
    for label, at_ns in deadlines(g, now_ns):
        short = label.split()[0]
        left = at_ns - now_ns
        return f"{short} in {duration(left)}" if left > 0 else f"{short} due now"
    return "-"


def members_summary(group: GroupView) -> str:
    running = group.members_by_state.get("RUNNING", 0)
    return f"{running}/{group.members}"


def labels_text(labels: dict[str, str]) -> str:
    """``key=value,...`` in key order (the selector syntax), or ``-`` for none."""
    return ",".join(f"{key}={value}" for key, value in sorted(labels.items())) or "-"


def group_columns(wide: bool = False, show_labels: bool = False) -> list[str]:
    """The groups table's columns; ``show_labels`` adds LABELS last (kubectl's
    ``--show-labels``)."""
    columns = ["NAME", "OWNER", "STATE", "RUNNING", "ATTEMPT", "AGE", "REASON"]
    if show_labels:
        columns.append("LABELS")
    if wide:
        columns[5:5] = ["PRIORITY", "MODE", "TASKS", "HELD", "GPU", "DEADLINE", "EXPECTED START"]
    return columns


def group_row(
    g: GroupView, now_ns: int, wide: bool = False, show_labels: bool = False
) -> list[str]:
    row = [g.name, g.owner, g.state, members_summary(g), str(g.attempt)]
    if wide:
        row += [
            str(g.priority),
            g.mode,
            f"{g.tasks_placed}/{g.tasks_desired}",
            str(g.tasks_held),
            str(g.gpu_placed + g.gpu_held),
            deadline_text(g, now_ns),
            expected_start_cell(g, now_ns),
        ]
    row += [age_text(now_ns - g.submitted_at_ns), group_reason(g, now_ns)]
    if show_labels:
        row.append(labels_text(g.labels))
    return row


def member_columns(with_group: bool = True) -> list[str]:
    columns = ["MEMBER", "KIND", "OWNER", "PROFILE", "STATE", "TASKS", "RUNNING", "NODES"]
    columns += ["CLAIMS", "RESTARTS", "REASON"]
    return ["GROUP", *columns] if with_group else columns


def member_row(m: MemberView, with_group: bool = True) -> list[str]:
    held = f" (+{m.held} held)" if m.held else ""
    nodes = ",".join(m.nodes or m.held_nodes) or "-"
    claims = " ".join(f"{c}:{s}" for c, s in sorted(m.claims.items())) or "-"
    row = [m.name, m.kind, m.owner, m.profile or "-", m.state]
    row += [f"{m.placed}/{m.desired}{held}", f"{m.running}/{m.desired}", nodes, claims]
    row += [display.restarts_text(m.restarts, m.uncounted_restarts)]
    row += [display.member_reason(m.state, m.last_reason)]
    return [m.group, *row] if with_group else row


HOLD_COLUMNS = ["NODE", "GROUP", "MEMBER", "TASK", "KIND", "GPU", "RUNNING"]


def hold_row(h: HoldView) -> list[str]:
    running = "yes" if h.running else "no"
    return [h.node, h.group, h.member, str(h.index), h.kind, str(h.gpu), running]


EVENT_COLUMNS = ["POS", "TIME", "EVENT", "MEMBER", "BY", "DETAIL"]


def event_row(e: TimelineEntry, origin_ns: int) -> list[str]:
    detail = readable(e.detail) if e.detail else "-"
    at = offset(e.at_ns, origin_ns)
    return [str(e.position), at, e.event, e.member or "-", e.actor or "-", detail]
