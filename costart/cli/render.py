"""How `describe` and `why` print a view for people: rich tables and aligned lines.
(The lists of `get` print through `costart.cli.listing`, without rich.)

Times in the views are controller times (integer ns), shown by `costart.display`: ages
and deadlines against one ``now_ns`` per command (`costart.display.age_reference`: the
wall clock, or a virtual clock's newest event in the whole log), controller times as
ISO-8601 UTC (``t+1h06m`` on a virtual clock).
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence

from rich.console import Console
from rich.table import Table

from costart import display
from costart.cli.estimated_rows import expected_start_lines
from costart.cli.rows import (
    EVENT_COLUMNS,
    HOLD_COLUMNS,
    deadlines,
    event_row,
    group_reason,
    hold_row,
    labels_text,
    member_columns,
    member_row,
)
from costart.cli.tables import plain_table
from costart.display import clock, duration, moment, offset, queue_text
from costart.domain.events import PendReason
from costart.projections.models import GroupDetail, HoldView, MemberView, TimelineEntry
from costart.service.queries import Why

HIDDEN = "(hidden)"  # an env value the server withheld from this caller


def reason_text(reason: PendReason | None, now_ns: int) -> str:
    return display.reason_text(reason, now_ns)


def members_table(members: Sequence[MemberView], with_group: bool = True) -> Table:
    table = plain_table(member_columns(with_group))
    for m in members:
        table.add_row(*member_row(m, with_group))
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
    table = plain_table(HOLD_COLUMNS)
    for h in holds:
        table.add_row(*hold_row(h))
    return table


def events_table(events: Sequence[TimelineEntry], origin_ns: int) -> Table:
    table = plain_table(EVENT_COLUMNS)
    for e in events:
        table.add_row(*event_row(e, origin_ns))
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


SINCE_SUBMISSION = "+offset from the group's submission"
"""The time base of every offset `describe` prints (the forensics commands' too)."""


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
    header += expected_start_lines(g, now_ns)
    for line in header:
        console.print(line, highlight=False, markup=False)
    console.print("\n[bold]Members[/bold]")
    console.print(members_table(detail.members, with_group=False))
    if any(m.tasks for m in detail.members):
        console.print(f"\n[bold]Tasks[/bold] (STARTED, ENDED: {SINCE_SUBMISSION})")
        console.print(tasks_table(detail.members, g.submitted_at_ns))
    console.print("\n[bold]Holds[/bold]")
    console.print(holds_table(detail.holds) if detail.holds else "  (none)")
    console.print(f"\n[bold]Pend-reason history[/bold] ({SINCE_SUBMISSION})")
    if not detail.pend_history:
        console.print("  (none)")
    for p in detail.pend_history:
        at = offset(p.at_ns, g.submitted_at_ns)
        text = reason_text(p.reason, p.at_ns)
        console.print(f"  {at:>8} {text}", highlight=False, markup=False)
    console.print(f"\n[bold]Recent events[/bold] (TIME: {SINCE_SUBMISSION})")
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
