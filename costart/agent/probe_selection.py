"""Which claims a node's agent probes now, from the tasks placed on its nodes and their
members' rows: the one place `costart agent` and `costart slurm` decide it.

A member claim is probed by the member's first task (the lowest index), and only while
the member has not started (member claims gate only the first start), on the agent
that fronts that task's node; a task claim, by the task's own agent, while the task is
placed and the claim PENDING. Only claims the member's run table gives a probe.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import NamedTuple
from urllib.parse import quote

from costart.agent.model import NodeTask
from costart.projections import MemberView
from costart.rest.client import Client


class ProbeKey(NamedTuple):
    group_id: str
    group: str
    member: str
    claim: str
    task: int | None  # None: a member claim
    attempt: int


class MembersPerPass:
    """Each group's member views, read at most once per pass."""

    def __init__(self, api: Client) -> None:
        self.api = api
        self.cache: dict[str, list[MemberView]] = {}

    def of(self, group: str) -> list[MemberView]:
        if group not in self.cache:
            path = f"/v1/groups/{quote(group, safe='')}/members"
            self.cache[group] = self.api.call_list(path, MemberView)
        return self.cache[group]

    def member(self, group: str, name: str) -> MemberView | None:
        return next((m for m in self.of(group) if m.name == name), None)


def wanted_probes(
    desired: Sequence[NodeTask], members: MembersPerPass, ours: Collection[str]
) -> dict[ProbeKey, tuple[MemberView, NodeTask]]:
    """The claims to probe now (see the module), each with its member and task."""
    wanted: dict[ProbeKey, tuple[MemberView, NodeTask]] = {}
    for task in desired:
        if task.task_state != "PLACED":
            continue
        member = members.member(task.group, task.member)
        if member is None or member.run is None or not member.run.probes:
            continue
        first = min(member.tasks, key=lambda t: t.index, default=None)
        for claim, status in sorted(member.claims.items()):
            mine = first is not None and first.index == task.task and first.node in ours
            waiting = task.state == "PLACED"  # member claims gate only the first start
            if status == "PENDING" and mine and waiting and member.run.probe(claim):
                key = ProbeKey(task.group_id, task.group, task.member, claim, None, task.attempt)
                wanted[key] = (member, task)
        own = next((t for t in member.tasks if t.index == task.task), None)
        for claim, status in sorted(own.claims.items() if own else ()):
            if status == "PENDING" and member.run.probe(claim) is not None:
                key = ProbeKey(
                    task.group_id, task.group, task.member, claim, task.task, task.task_attempt
                )
                wanted[key] = (member, task)
    return wanted


def claim_report(key: ProbeKey, ready: bool, detail: str) -> tuple[str, dict[str, object]]:
    """The claim report a probe's verdict makes: its path and body."""
    body: dict[str, object] = {"attempt": key.attempt, "status": "READY" if ready else "FAILED"}
    if not ready:
        body["reason"] = detail[:500]
    if key.task is not None:
        body["task"] = key.task
    group, member, claim = (quote(text, safe="") for text in (key.group, key.member, key.claim))
    return f"/v1/groups/{group}/members/{member}/claims/{claim}", body
