"""Aggregate state (docs/design.md §3.2) as plain msgspec structs: the single source for
snapshots, replay and display. Mutated only by `costart.domain.fold`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final, Literal, get_args
from uuid import UUID

import msgspec

from costart.domain.events import Assignment, PendReason
from costart.domain.spec_types import GroupSpec, MemberSpec

GroupStatus = Literal[
    "PENDING", "RESERVING", "PLACED", "RUNNING", "DEGRADED", "SUCCEEDED", "FAILED", "CANCELLED"
]
MemberStatus = Literal[
    "PENDING", "HELD", "PLACED", "READY", "RUNNING", "RESTARTING", "SUCCEEDED", "FAILED", "STOPPED"
]
ClaimStatus = Literal["PENDING", "READY", "FAILED"]
TaskStatus = Literal["PLACED", "RUNNING", "SUCCEEDED", "FAILED", "STOPPED"]

# Every status, in lifecycle order: the one list that tables, tests and metrics iterate.
GROUP_STATUSES: Final[tuple[GroupStatus, ...]] = get_args(GroupStatus)
MEMBER_STATUSES: Final[tuple[MemberStatus, ...]] = get_args(MemberStatus)

GROUP_TERMINAL: Final = frozenset({"SUCCEEDED", "FAILED", "CANCELLED"})
GROUP_LIVE: Final = frozenset(GROUP_STATUSES) - GROUP_TERMINAL
GROUP_WAITING: Final = frozenset({"PENDING", "RESERVING"})
GROUP_STARTED: Final = frozenset({"RUNNING", "DEGRADED"})
MEMBER_TERMINAL: Final = frozenset({"SUCCEEDED", "FAILED", "STOPPED"})
# Member states in which the member uses (not merely holds) capacity.
MEMBER_USING: Final = frozenset({"PLACED", "READY", "RUNNING"})
TASK_LIVE: Final = frozenset({"PLACED", "RUNNING"})


NO_TASK_CLAIMS: Final[Mapping[str, ClaimStatus]] = {}
"""The claims of a task without claims of its own (most tasks): one shared empty map
instead of an empty dict per task (ADR 0106). Typed read-only, as every task's claims
are, so nothing changes it in place."""


class TaskState(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """One task (a job's task, a replica set's replica) as the host runs it: index
    ``index`` of the member, placed on ``node`` by the member's placement ``attempt``.

    A member keeps the newest task of each index: a task placed again (a restart, a
    re-placed replica) replaces the one before, so a report about the earlier one is
    recognised as late by its attempt. STOPPED: ended by costart (released, scaled away,
    the member or group stopped or failed) rather than by its own exit."""

    index: int
    node: str
    attempt: int
    status: TaskStatus = "PLACED"
    started_at_ns: int | None = None
    ended_at_ns: int | None = None
    exit_code: int | None = None
    claims: Mapping[str, ClaimStatus] = msgspec.field(default_factory=lambda: NO_TASK_CLAIMS)
    """The task's own claims (`MemberSpec.task_claims`). Read-only: the fold changes a
    claim by giving the task a new map."""


class GroupState(msgspec.Struct, kw_only=True, gc=False):
    """Everything the controller knows about one group, field-complete."""

    id: UUID
    version: int
    name: str
    spec: GroupSpec
    submission_seq: int
    member_ids: tuple[UUID, ...]
    status: GroupStatus = "PENDING"
    attempt: int = 1
    barrier_released_attempt: int = 0
    releases: int = 0
    group_restarts: int = 0
    reservation_deadline_ns: int | None = None
    barrier_deadline_ns: int | None = None
    retry_at_ns: int = 0
    pend_reason: PendReason | None = None
    submitted_at_ns: int = 0
    placed_at_ns: int | None = None
    started_at_ns: int | None = None
    ended_at_ns: int | None = None
    last_reason: str | None = None
    # A borrower admitted on a runtime estimate: a reservation may stop it from this
    # time on (ADR 0121). None: placed by limits, or normally.
    admitted_until_ns: int | None = None

    @property
    def is_terminal(self) -> bool:
        return self.status in GROUP_TERMINAL

    @property
    def barrier_released(self) -> bool:
        """True once the current attempt's barrier was released."""
        return self.barrier_released_attempt == self.attempt


def estimate_ran_out(group: GroupState, at_ns: int) -> bool:
    """Was the group admitted on a runtime estimate that has run out by ``at_ns``? Then
    a reservation may stop it (ADR 0121), as it may stop preemptible work."""
    until = group.admitted_until_ns
    return until is not None and at_ns >= until


class MemberState(msgspec.Struct, gc=False):
    """Everything the controller knows about one member, field-complete. Built by
    keyword everywhere but in a snapshot's decode, which passes a stored row's values in
    field order (ADR 0129: one call instead of a copy and a set per field)."""

    id: UUID
    version: int
    group_id: UUID
    spec: MemberSpec
    status: MemberStatus = "PENDING"
    desired: int = 0
    # The member's placements so far: the tasks a placement adds carry its number.
    attempt: int = 0
    # The newest task of each index, in index order (see TaskState).
    tasks: list[TaskState] = msgspec.field(default_factory=list)
    held: list[Assignment] = msgspec.field(default_factory=list)
    assignments: list[Assignment] = msgspec.field(default_factory=list)
    claims: Mapping[str, ClaimStatus] = msgspec.field(default_factory=dict)
    """The member's claims (`MemberSpec.claims`). Read-only, as a task's claims are: the
    fold changes a claim by giving the member a new map, so a restored state may share
    one map among the members whose claims are equal (ADR 0129)."""
    restarts: int = 0
    uncounted_restarts: int = 0
    failed_replicas: int = 0
    last_reason: str | None = None
    last_exit_code: int | None = None
    started_at_ns: int | None = None
    ended_at_ns: int | None = None

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def is_terminal(self) -> bool:
        return self.status in MEMBER_TERMINAL

    @property
    def claims_ready(self) -> bool:
        """Every member claim READY, and every claim of every placed task."""
        # Plain loops, not any()/all() over generators: the fold asks after every
        # placement and claim report (replay's hot path).
        for status in self.claims.values():
            if status != "READY":
                return False
        for task in self.tasks:
            if task.status == "PLACED":
                for status in task.claims.values():
                    if status != "READY":
                        return False
        return True

    @property
    def placed_count(self) -> int:
        return len(self.assignments)

    @property
    def running_tasks(self) -> int:
        """How many of its tasks run now (a replica set's running count)."""
        return sum(1 for t in self.tasks if t.status == "RUNNING")

    def task(self, index: int) -> TaskState | None:
        """The newest task of ``index``, if it was ever placed."""
        for task in self.tasks:
            if task.index == index:
                return task
        return None
