"""Who may read the values of a run table's ``env``, and the copy everyone else gets
(docs/design.md §11, ADR 0064).

A member's ``env`` is written by its group's owner and may hold things other users must
not read (a key, a password in a URL). The names are not secret: they say what a task
is given, and the whole run table stays readable. So every answer that carries a run
table -- member rows, a group's detail, the watch stream's ``GroupSubmitted`` and
``MemberCreated`` -- shows the values only to:

- the group's owner (the spec's ``owner``, not a member's own ``owner``: the group's
  owner wrote the whole spec) and admins;
- an agent (role ``agent``) for a group with a task placed on one of its nodes: it runs
  those tasks, with that environment. Not on the watch stream, which only wakes agents
  up: an agent reads the run table from the group's members.

Everybody else gets `withheld`: every value replaced by `WITHHELD_VALUE` and the run
table's ``env_withheld`` set, so no reader mistakes the marker for a value. The log and
the views keep the values; only the copy on the wire changes. A CLI on a local store is
the operator with the files, and shows them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Final

import msgspec

from costart.domain import events as ev
from costart.domain.run_table import RunSpec
from costart.domain.spec_types import MemberSpec
from costart.projections import GroupDetail, GroupView, HoldView, MemberView
from costart.rest.auth import User

WITHHELD_VALUE: Final = "(hidden)"


def sees_env_values(user: User, owner: str | None, nodes: Iterable[str] = ()) -> bool:
    """Whether ``user`` may read the env values of a group owned by ``owner`` (None: not
    known, so only an admin) whose tasks are placed on ``nodes``."""
    if user.is_admin:
        return True
    if user.role == "owner":
        return owner is not None and user.name == owner
    if user.role == "agent":
        return not set(user.nodes).isdisjoint(nodes)
    return False  # claim drivers never run a task


def withheld(run: RunSpec) -> RunSpec:
    """``run`` with its env values replaced (the names kept, in order); ``run`` itself
    when there is nothing to withhold."""
    if not run.env or run.env_withheld:
        return run
    env = tuple((name, WITHHELD_VALUE) for name, _ in run.env)
    return msgspec.structs.replace(run, env=env, env_withheld=True)


def member_row(row: MemberView, shows: bool) -> MemberView:
    """The member row as a reader sees it (``shows``: it may see env values)."""
    if shows or row.run is None:
        return row
    run = withheld(row.run)
    return row if run is row.run else msgspec.structs.replace(row, run=run)


def placed_nodes(rows: Iterable[MemberView]) -> set[str]:
    """The nodes a group's tasks are placed on (held capacity runs nothing)."""
    return {node for row in rows for node in row.nodes}


def group_members(user: User, group: GroupView, rows: list[MemberView]) -> list[MemberView]:
    """One group's member rows for ``user``, ``group`` being its row. The two are read
    apart: if a new group took the name between the reads, the rows are not that
    group's, whose owner was not read, so only an admin sees their values."""
    same = all(row.group_id == group.id for row in rows)
    shows = same and sees_env_values(user, group.owner, placed_nodes(rows))
    return [member_row(row, shows or user.is_admin) for row in rows]


def group_detail(user: User, detail: GroupDetail) -> GroupDetail:
    """A group's detail for ``user`` (its group and member rows come from one read)."""
    shows = sees_env_values(user, detail.group.owner, placed_nodes(detail.members))
    if shows:
        return detail
    members = tuple(member_row(row, False) for row in detail.members)
    return msgspec.structs.replace(detail, members=members)


class MemberRows:
    """Rows of every group's members for one caller (``GET /v1/members``), each given
    with its group's row. An agent's groups are those with a task placed on one of its
    nodes: ``read_holds`` is called once, the first time an agent's answer has env
    values to decide on."""

    def __init__(self, user: User, read_holds: Callable[[], Iterable[HoldView]]) -> None:
        self.user = user
        self._read_holds = read_holds
        self._agent_groups: frozenset[str] | None = None

    def row(self, group: GroupView, row: MemberView) -> MemberView:
        if row.run is None or not row.run.env:
            return row
        if self.user.role != "agent":
            return member_row(row, sees_env_values(self.user, group.owner))
        if self._agent_groups is None:
            nodes = set(self.user.nodes)
            holds = self._read_holds()
            self._agent_groups = frozenset(
                h.group_id for h in holds if h.kind == "used" and h.node in nodes
            )
        return member_row(row, group.id in self._agent_groups)


def event_without_env(event: ev.DomainEvent) -> ev.DomainEvent:
    """``event`` with every run table's env values withheld; ``event`` itself when it
    carries none (only a group's and a member's creation carry specs)."""
    if isinstance(event, ev.GroupSubmitted):
        members = tuple(_member_spec(m) for m in event.spec.members)
        if all(new is old for new, old in zip(members, event.spec.members, strict=True)):
            return event
        return msgspec.structs.replace(
            event, spec=msgspec.structs.replace(event.spec, members=members)
        )
    if isinstance(event, ev.MemberCreated):
        spec = _member_spec(event.spec)
        return event if spec is event.spec else msgspec.structs.replace(event, spec=spec)
    return event


def _member_spec(spec: MemberSpec) -> MemberSpec:
    if spec.run is None:
        return spec
    run = withheld(spec.run)
    return spec if run is spec.run else msgspec.structs.replace(spec, run=run)
