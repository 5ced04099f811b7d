"""Rich tables for groups and members, shared by the CLI commands and the demo."""

from __future__ import annotations

from rich.table import Table

from costart.domain.states import GroupState, MemberState


def member_placed_text(member: MemberState) -> str:
    held = f" (+{len(member.held)} held)" if member.held else ""
    return f"{len(member.assignments)}/{member.desired}{held}"


def claims_text(member: MemberState) -> str:
    return " ".join(f"{name}:{status}" for name, status in member.claims.items()) or "-"


def members_table(group: GroupState, members: list[MemberState]) -> Table:
    title = f"{group.name}  [bold]{group.status}[/bold]  attempt {group.attempt}"
    if group.pend_reason is not None:
        title += f"  pending: {group.pend_reason.cls}: {group.pend_reason.message}"
    table = Table(title=title, title_justify="left")
    for column in ("member", "kind", "owner", "profile", "state", "placed", "claims", "restarts"):
        table.add_column(column)
    for m in members:
        table.add_row(
            m.name,
            m.spec.kind,
            m.spec.owner,
            m.spec.profile or "-",
            m.status,
            member_placed_text(m),
            claims_text(m),
            str(m.restarts),
        )
    return table
