"""Rich tables for groups and members, shared by the CLI commands and the demo."""

from __future__ import annotations

from rich.markup import escape
from rich.table import Table

from costart.cli.tables import plain_table
from costart.display import group_reason, member_reason, restarts_text
from costart.domain.states import GroupState, MemberState


def member_placed_text(member: MemberState) -> str:
    held = f" (+{len(member.held)} held)" if member.held else ""
    return f"{len(member.assignments)}/{member.desired}{held}"


def claims_text(member: MemberState) -> str:
    return " ".join(f"{name}:{status}" for name, status in member.claims.items()) or "-"


def members_table(group: GroupState, members: list[MemberState], now_ns: int) -> Table:
    """The group's members as of ``now_ns`` (the controller time of the state shown)."""
    title = f"{group.name}  [bold]{group.status}[/bold]  attempt {group.attempt}"
    reason = group_reason(
        group.status, group.pend_reason, group.last_reason, group.retry_at_ns, now_ns
    )
    if reason != "-":
        title += f"  {escape(reason)}"
    columns = ("MEMBER", "KIND", "OWNER", "PROFILE", "STATE", "PLACED", "CLAIMS", "RESTARTS")
    table = plain_table((*columns, "REASON"), title=title)
    for m in members:
        table.add_row(
            m.name,
            m.spec.kind,
            m.spec.owner,
            m.spec.profile or "-",
            m.status,
            member_placed_text(m),
            claims_text(m),
            restarts_text(m.restarts, m.uncounted_restarts),
            member_reason(m.status, m.last_reason),
        )
    return table
