"""How the CLI prints views: rich tables for people, JSON or YAML for scripts.

Times in the views are controller times (integer ns); ages are shown against
`age_reference`: the wall clock, unless the log runs on a virtual clock (the simulator's
starts at 0), whose ages are shown as of its newest event.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import msgspec
import yaml
from rich.console import Console
from rich.table import Table

from costart.domain.events import PendReason
from costart.projections import GroupDetail, GroupView, HoldView, MemberView, TimelineEntry
from costart.rest.client import WatchEvent
from costart.rest.models import Why

Output = Literal["table", "wide", "json", "yaml"]
SECOND_NS = 10**9


def duration_text(ns: int | None) -> str:
    """kubectl-style short durations: 45s, 12m, 3h, 2d."""
    if ns is None:
        return "-"
    seconds = max(ns, 0) // SECOND_NS
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= 2 * size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def print_data(console: Console, data: Any, output: Output) -> None:
    """Machine-readable output: the view rows as JSON or YAML (stable field order)."""
    builtins = msgspec.to_builtins(data)
    if output == "json":
        console.print_json(msgspec.json.encode(builtins).decode())
    else:
        console.print(yaml.safe_dump(builtins, sort_keys=False, allow_unicode=True), end="")


WALL_CLOCK_FLOOR_NS = 10**18
"""2001-09-09: a controller time before this is a virtual clock's, not the wall's."""


def age_reference(groups: Sequence[GroupView], wall_ns: int) -> int:
    """The time ages are measured to: ``wall_ns``, or for a log on a virtual clock the
    newest event time of ``groups`` (so a simulation's log shows simulated ages)."""
    newest = max((g.last_event_at_ns for g in groups), default=wall_ns)
    return wall_ns if newest >= WALL_CLOCK_FLOOR_NS else newest


def reason_text(reason: PendReason | None) -> str:
    return "-" if reason is None else f"{reason.cls}: {reason.message}"


def members_summary(group: GroupView) -> str:
    running = group.members_by_state.get("RUNNING", 0)
    return f"{running}/{group.members}"


def groups_table(groups: Sequence[GroupView], now_ns: int, wide: bool = False) -> Table:
    table = Table(box=None, pad_edge=False)
    columns = ["NAME", "OWNER", "STATE", "RUNNING", "ATTEMPT", "AGE", "REASON"]
    if wide:
        columns[5:5] = ["PRIORITY", "MODE", "TASKS", "HELD", "GPU"]
    for column in columns:
        table.add_column(column, overflow="fold")
    for g in groups:
        row = [g.name, g.owner, g.state, members_summary(g), str(g.attempt)]
        if wide:
            row += [
                str(g.priority),
                g.mode,
                f"{g.tasks_placed}/{g.tasks_desired}",
                str(g.tasks_held),
                str(g.gpu_placed + g.gpu_held),
            ]
        row += [
            duration_text(now_ns - g.submitted_at_ns),
            reason_text(g.pend_reason) if g.pend_reason else (g.last_reason or "-"),
        ]
        table.add_row(*row)
    return table


def members_table(members: Sequence[MemberView], with_group: bool = True) -> Table:
    table = Table(box=None, pad_edge=False)
    columns = ["MEMBER", "KIND", "OWNER", "PROFILE", "STATE", "TASKS", "NODES", "CLAIMS"]
    columns += ["RESTARTS", "LAST REASON"]
    if with_group:
        columns.insert(0, "GROUP")
    for column in columns:
        table.add_column(column, overflow="fold")
    for m in members:
        held = f" (+{m.held} held)" if m.held else ""
        nodes = ",".join(m.nodes or m.held_nodes) or "-"
        claims = " ".join(f"{c}:{s}" for c, s in sorted(m.claims.items())) or "-"
        row = [m.name, m.kind, m.owner, m.profile or "-", m.state]
        row += [f"{m.placed}/{m.desired}{held}", nodes, claims, str(m.restarts)]
        row += [m.last_reason or "-"]
        if with_group:
            row.insert(0, m.group)
        table.add_row(*row)
    return table


def holds_table(holds: Sequence[HoldView]) -> Table:
    table = Table(box=None, pad_edge=False)
    for column in ("NODE", "GROUP", "MEMBER", "TASK", "KIND", "GPU", "RUNNING"):
        table.add_column(column)
    for h in holds:
        table.add_row(
            h.node,
            h.group,
            h.member,
            str(h.index),
            h.kind,
            str(h.gpu),
            "yes" if h.running else "no",
        )
    return table


def events_table(events: Sequence[TimelineEntry], origin_ns: int) -> Table:
    table = Table(box=None, pad_edge=False)
    for column in ("POS", "TIME", "EVENT", "MEMBER", "DETAIL"):
        table.add_column(column, overflow="fold")
    for e in events:
        at = f"+{(e.at_ns - origin_ns) / SECOND_NS:.1f}s"
        table.add_row(str(e.position), at, e.event, e.member or "-", e.detail or "-")
    return table


def pend_lines(reason: PendReason | None) -> list[str]:
    """The pend reason with its numbers: class, blocking member, need, best, queue."""
    if reason is None:
        return ["Pending:    -"]
    lines = [f"Pending:    {reason.cls}: {reason.message}"]
    for label, value in (
        ("  member", reason.member),
        ("  needs", reason.need),
        ("  best", reason.best),
        ("  queue", None if reason.queue_position is None else f"#{reason.queue_position}"),
    ):
        if value is not None:
            lines.append(f"{label + ':':<12}{value}")
    return lines


def print_describe(console: Console, detail: GroupDetail, now_ns: int) -> None:
    g = detail.group
    header = [
        f"Name:       {g.name}",
        f"Owner:      {g.owner}",
        f"Priority:   {g.priority}",
        f"Mode:       {g.mode}",
        f"State:      {g.state}   attempt {g.attempt}, releases {g.releases}, "
        f"group restarts {g.group_restarts}",
        f"Age:        {duration_text(now_ns - g.submitted_at_ns)}",
        f"Tasks:      {g.tasks_placed}/{g.tasks_desired} placed, {g.tasks_held} held "
        f"({g.gpu_placed} GPU placed, {g.gpu_held} GPU held)",
    ]
    if g.started_at_ns is not None:
        header.append(f"Started:    after {duration_text(g.started_at_ns - g.submitted_at_ns)}")
    if g.last_reason:
        header.append(f"Last:       {g.last_reason}")
    header += pend_lines(g.pend_reason)
    for line in header:
        console.print(line, highlight=False, markup=False)
    console.print("\n[bold]Members[/bold]")
    console.print(members_table(detail.members, with_group=False))
    console.print("\n[bold]Holds[/bold]")
    console.print(holds_table(detail.holds) if detail.holds else "  (none)")
    console.print("\n[bold]Pend-reason history[/bold]")
    if not detail.pend_history:
        console.print("  (none)")
    for p in detail.pend_history:
        at = duration_text(p.at_ns - g.submitted_at_ns)
        console.print(f"  +{at} {reason_text(p.reason)}", highlight=False, markup=False)
    console.print("\n[bold]Recent events[/bold]")
    console.print(events_table(detail.events, g.submitted_at_ns))


def print_why(console: Console, why: Why) -> None:
    console.print(f"{why.group}: {why.state}", highlight=False, markup=False)
    for line in pend_lines(why.pend_reason):
        console.print(line, highlight=False, markup=False)
    for p in why.history:
        console.print(f"  @{p.position} {reason_text(p.reason)}", highlight=False, markup=False)


def watch_line(event: WatchEvent) -> str:
    """One watched event as a line: when (ISO-8601 UTC), where in the log, what, whom."""
    who = f"{event.group}/{event.member}" if event.member else (event.group or "-")
    return f"{event.at}  #{event.position}  {event.type:<20} {who}"


def group_line(group: GroupView, event: WatchEvent) -> str:
    """A watched group's row after an event about it."""
    return (
        f"{event.at}  {group.name:<24} {group.state:<10} {members_summary(group):<24} {event.type}"
    )
