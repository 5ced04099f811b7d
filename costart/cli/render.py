"""How the CLI prints views: rich tables for people, JSON or YAML for scripts.

Times in the views are controller times (integer ns), shown by `costart.display`: ages
and deadlines against one ``now_ns`` per command (`costart.display.age_reference`: the
wall clock, or a virtual clock's newest event in the whole log), controller times as
ISO-8601 UTC (``t+1h06m`` on a virtual clock).
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from typing import Any, Literal

import msgspec
import yaml
from rich.console import Console
from rich.table import Table

from costart import display
from costart.cli.tables import plain_table
from costart.display import clock, duration, moment, offset, queue_text, readable
from costart.domain.events import PendReason
from costart.projections import GroupDetail, GroupView, HoldView, MemberView, TimelineEntry
from costart.rest.client import WatchEvent
from costart.service.queries import Why

Output = Literal["table", "wide", "json", "yaml"]
HIDDEN = "(hidden)"  # an env value the server withheld from this caller


def age_text(ns: int | None) -> str:
    """An age or elapsed time: two units (``1h06m``), ``-`` when unknown."""
    return "-" if ns is None else duration(max(ns, 0))


def print_data(console: Console, data: Any, output: Output) -> None:
    """Machine-readable output: the view rows as JSON or YAML (stable field order)."""
    builtins = msgspec.to_builtins(data)
    if output == "json":
        console.print_json(msgspec.json.encode(builtins).decode())
    else:
        console.print(yaml.safe_dump(builtins, sort_keys=False, allow_unicode=True), end="")


def age_reference(groups: Sequence[GroupView], wall_ns: int) -> int:
    """The one point a command measures ages and deadlines to (see `costart.display`):
    pass every group of the log, so `get` and `describe` agree."""
    return display.age_reference((g.last_event_at_ns for g in groups), wall_ns)


def reason_text(reason: PendReason | None, now_ns: int) -> str:
    return display.reason_text(reason, now_ns)


def group_reason(g: GroupView, now_ns: int) -> str:
    return display.group_reason(g.state, g.pend_reason, g.last_reason, g.retry_at_ns, now_ns)


def deadlines(g: GroupView, now_ns: int) -> list[tuple[str, int]]:
    """The group's open deadlines: reservation expiry, barrier deadline, retry time."""
    found = [
        ("reservation expires", g.reservation_deadline_ns),
        ("barrier deadline", g.barrier_deadline_ns),
        ("retry", g.retry_at_ns if g.state == "PENDING" and g.retry_at_ns > now_ns else None),
    ]
    return [(label, at) for label, at in found if at is not None]


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


def groups_table(
    groups: Sequence[GroupView], now_ns: int, wide: bool = False, show_labels: bool = False
) -> Table:
    """The groups as a table; ``show_labels`` adds a LABELS column last (kubectl's
    ``--show-labels``)."""
    columns = ["NAME", "OWNER", "STATE", "RUNNING", "ATTEMPT", "AGE", "REASON"]
    if show_labels:
        columns.append("LABELS")
    if wide:
        columns[5:5] = ["PRIORITY", "MODE", "TASKS", "HELD", "GPU", "DEADLINE"]
    table = plain_table(columns)
    for g in groups:
        row = [g.name, g.owner, g.state, members_summary(g), str(g.attempt)]
        if wide:
            row += [
                str(g.priority),
                g.mode,
                f"{g.tasks_placed}/{g.tasks_desired}",
                str(g.tasks_held),
                str(g.gpu_placed + g.gpu_held),
                deadline_text(g, now_ns),
            ]
        row += [age_text(now_ns - g.submitted_at_ns), group_reason(g, now_ns)]
        if show_labels:
            row.append(labels_text(g.labels))
        table.add_row(*row)
    return table


def members_table(members: Sequence[MemberView], with_group: bool = True) -> Table:
    columns = ["MEMBER", "KIND", "OWNER", "PROFILE", "STATE", "TASKS", "RUNNING", "NODES"]
    columns += ["CLAIMS", "RESTARTS", "REASON"]
    if with_group:
        columns.insert(0, "GROUP")
    table = plain_table(columns)
    for m in members:
        held = f" (+{m.held} held)" if m.held else ""
        nodes = ",".join(m.nodes or m.held_nodes) or "-"
        claims = " ".join(f"{c}:{s}" for c, s in sorted(m.claims.items())) or "-"
        row = [m.name, m.kind, m.owner, m.profile or "-", m.state]
        row += [f"{m.placed}/{m.desired}{held}", f"{m.running}/{m.desired}", nodes, claims]
        row += [display.restarts_text(m.restarts, m.uncounted_restarts)]
        row += [display.member_reason(m.state, m.last_reason)]
        if with_group:
            row.insert(0, m.group)
        table.add_row(*row)
    return table


def tasks_table(members: Sequence[MemberView], origin_ns: int) -> Table:
    """Every member's newest task of each index: node, attempt, state, exit."""
    columns = ("MEMBER", "TASK", "NODE", "ATTEMPT", "STATE", "EXIT", "STARTED", "ENDED", "CLAIMS")
    table = plain_table(columns)
    for m in members:
        for t in m.tasks:
            table.add_row(
                m.name,
                str(t.index),
                t.node,
                str(t.attempt),
                t.state,
                "-" if t.exit_code is None else str(t.exit_code),
                _offset(t.started_at_ns, origin_ns),
                _offset(t.ended_at_ns, origin_ns),
                " ".join(f"{c}:{s}" for c, s in sorted(t.claims.items())) or "-",
            )
    return table


def _offset(at_ns: int | None, origin_ns: int) -> str:
    return "-" if at_ns is None else offset(at_ns, origin_ns)


def holds_table(holds: Sequence[HoldView]) -> Table:
    table = plain_table(("NODE", "GROUP", "MEMBER", "TASK", "KIND", "GPU", "RUNNING"))
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
    table = plain_table(("POS", "TIME", "EVENT", "MEMBER", "BY", "DETAIL"))
    for e in events:
        at = offset(e.at_ns, origin_ns)
        detail = readable(e.detail) if e.detail else "-"
        table.add_row(str(e.position), at, e.event, e.member or "-", e.actor or "-", detail)
    return table


def pend_lines(reason: PendReason | None, now_ns: int, current: str | None = None) -> list[str]:
    """The pend reason with its numbers: class, blocking member, need, best, queue.
    ``current``: the reason as the group's state says it now, when that differs from
    the stored one (a group that ended, or was just released)."""
    if reason is None or (current is not None and current != reason_text(reason, now_ns)):
        return [f"Reason:     {current or '-'}"]
    lines = [f"Pending:    {reason_text(reason, now_ns)}"]
    for label, value in (
        ("  member", reason.member),
        ("  needs", reason.need),
        ("  best", reason.best),
        ("  queue", queue_text(reason)),
    ):
        if value is not None:
            lines.append(f"{label + ':':<12}{value}")
    return lines


def print_describe(console: Console, detail: GroupDetail, now_ns: int) -> None:
    g = detail.group
    header = [
        f"Name:       {g.name}",
        f"Owner:      {g.owner}",
        f"Labels:     {labels_text(g.labels)}",
        f"Priority:   {g.priority}",
        f"Mode:       {g.mode}",
        f"State:      {g.state}   attempt {g.attempt}, releases {g.releases}, "
        f"group restarts {g.group_restarts}",
        f"Submitted:  {moment(g.submitted_at_ns, now_ns)}",
        f"Tasks:      {g.tasks_placed}/{g.tasks_desired} placed, {g.tasks_held} held "
        f"({g.gpu_placed} GPU placed, {g.gpu_held} GPU held)",
    ]
    if g.started_at_ns is not None:
        header.append(
            f"Started:    {clock(g.started_at_ns)}, "
            f"{duration(g.started_at_ns - g.submitted_at_ns)} after submission"
        )
    if g.ended_at_ns is not None:
        header.append(f"Ended:      {moment(g.ended_at_ns, now_ns)}")
    for label, at_ns in deadlines(g, now_ns):
        header.append(f"{'Deadline:':<12}{label} {moment(at_ns, now_ns)}")
    if g.last_reason:
        header.append(f"Last cause: {g.last_reason}")
    header += pend_lines(g.pend_reason, now_ns, group_reason(g, now_ns))
    for line in header:
        console.print(line, highlight=False, markup=False)
    console.print("\n[bold]Members[/bold]")
    console.print(members_table(detail.members, with_group=False))
    if any(m.tasks for m in detail.members):
        console.print("\n[bold]Tasks[/bold]")
        console.print(tasks_table(detail.members, g.submitted_at_ns))
    console.print("\n[bold]Holds[/bold]")
    console.print(holds_table(detail.holds) if detail.holds else "  (none)")
    console.print("\n[bold]Pend-reason history[/bold]")
    if not detail.pend_history:
        console.print("  (none)")
    for p in detail.pend_history:
        at = offset(p.at_ns, g.submitted_at_ns)
        text = reason_text(p.reason, p.at_ns)
        console.print(f"  {at:>8} {text}", highlight=False, markup=False)
    console.print("\n[bold]Recent events[/bold]")
    console.print(events_table(detail.events, g.submitted_at_ns))


def print_why(console: Console, why: Why, now_ns: int) -> None:
    console.print(f"{why.group}: {why.state}", highlight=False, markup=False)
    for line in pend_lines(why.pend_reason, now_ns):
        console.print(line, highlight=False, markup=False)
    for p in why.history:
        text = f"  @{p.position} {clock(p.at_ns)} {reason_text(p.reason, p.at_ns)}"
        console.print(text, highlight=False, markup=False)


def print_member(console: Console, m: MemberView, now_ns: int) -> None:
    """`describe member GROUP/MEMBER`: one line per fact, times readable."""
    held = f", {m.held} held on {', '.join(m.held_nodes)}" if m.held else ""
    claims = " ".join(f"{c}:{s}" for c, s in sorted(m.claims.items())) or "-"
    lines = [
        f"Name:       {m.group}/{m.name}",
        f"Kind:       {m.kind}",
        f"Owner:      {m.owner}",
        f"Profile:    {m.profile or '-'}",
        f"State:      {m.state}",
        f"Tasks:      {m.placed}/{m.desired} placed (start quorum {m.min_start}, "
        f"run floor {m.min_running}){held}",
        f"Nodes:      {', '.join(m.nodes) or '-'}",
        f"Claims:     {claims}",
        f"Restarts:   {display.restarts_text(m.restarts, m.uncounted_restarts)}, "
        f"failed replicas {m.failed_replicas}",
    ]
    if m.started_at_ns is not None:
        lines.append(f"Started:    {moment(m.started_at_ns, now_ns)}")
    if m.ended_at_ns is not None:
        lines.append(f"Ended:      {moment(m.ended_at_ns, now_ns)}")
    if m.last_exit_code is not None:
        lines.append(f"Exit code:  {m.last_exit_code}")
    lines.append(f"Reason:     {display.member_reason(m.state, m.last_reason)}")
    if m.run is not None:
        lines += run_lines(m)
    for line in lines:
        console.print(line, highlight=False, markup=False)


def run_lines(m: MemberView) -> list[str]:
    """The member's run table and each task's log file (on its node)."""
    run = m.run
    if run is None:
        return []
    facts = [f"grace {duration(run.grace_ns)}"]
    if run.cwd is not None:
        facts.insert(0, f"cwd {run.cwd}")
    ports = run.ports(m.desired)
    if ports:
        facts.append(f"ports {ports.start}-{ports.stop - 1}")
    lines = [f"Run:        {shlex.join(run.argv)} ({', '.join(facts)})"]
    # A server withholds the values from all but the group's owner and admins: said
    # plainly, so nobody reads the marker as the value.
    lines += [f"Env:        {k}={HIDDEN if run.env_withheld else v}" for k, v in run.env]
    if run.env_withheld:
        lines.append(
            "            (values hidden from this caller; the group's owner and admins see them)"
        )
    for probe in run.probes:
        what = shlex.join(probe.argv) if probe.kind == "exec" else probe.target
        give_up = f", FAILED after {probe.fail_after} misses" if probe.fail_after else ""
        lines.append(
            f"Probe:      {probe.claim}: {probe.kind} {what} every "
            f"{duration(probe.period_ns)} (timeout "
            f"{duration(probe.timeout_ns)}{give_up})"
        )
    lines += [f"Log:        task {t.index} on {t.node}: {t.log}" for t in m.tasks if t.log]
    return lines


def watch_line(event: WatchEvent) -> str:
    """One watched event as a line: when (ISO-8601 UTC), where in the log, what, whom."""
    who = f"{event.group}/{event.member}" if event.member else (event.group or "-")
    return f"{event.at}  #{event.position}  {event.type:<20} {who}"


def group_line(group: GroupView, event: WatchEvent) -> str:
    """A watched group's row after an event about it."""
    return (
        f"{event.at}  {group.name:<24} {group.state:<10} {members_summary(group):<24} {event.type}"
    )
