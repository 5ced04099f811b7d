"""What the agent reads from `costart serve` and what it keys its processes by."""

from __future__ import annotations

from typing import NamedTuple

import msgspec


class Refused(Exception):
    """The node will not run a task as asked: reported as its failure with reason
    ``refused`` and this message as the note (never the workload's ``error``)."""


class NodeTask(msgspec.Struct, frozen=True):
    """One row of ``GET /v1/nodes/{node}/tasks``: a task placed on one of our nodes.
    ``attempt`` is the member's placement attempt (its claims name it), ``task_attempt``
    the task's own (its reports name it)."""

    group: str
    member: str
    task: int
    node: str
    attempt: int
    kind: str
    state: str
    may_start: bool
    group_id: str = ""
    task_state: str = "PLACED"
    task_attempt: int = 0
    owner: str = ""

    @property
    def key(self) -> TaskKey:
        return TaskKey(self.group_id, self.member, self.task, self.task_attempt)

    @property
    def ref(self) -> str:
        return f"{self.group}/{self.member}/{self.task}"


class TaskKey(NamedTuple):
    """One run of one task: a relaunch (a newer attempt) is another key, so the same
    key is never started twice."""

    group_id: str
    member: str
    task: int
    attempt: int

    def file_name(self) -> str:
        return f"{self.group_id}.{self.member}.{self.task}.{self.attempt}.json"


class Exit(NamedTuple):
    """How a process ended, as the agent reports it (``event``: succeeded or exited)."""

    event: str
    exit_code: int | None = None
    reason: str | None = None
    note: str | None = None
