"""The display views' rows: what `costart get`, `describe` and the REST API show.

Every row is a frozen msgspec struct derived from the domain state by
`costart.projections.derive`; rows are stored canonically encoded, so a view rebuilt from
the log equals the incrementally built one byte for byte. New fields get defaults (the
views are rebuildable, but old rows must still decode until they are).
"""

from __future__ import annotations

from typing import Literal

import msgspec

from costart.domain.events import PendReason
from costart.domain.states import ClaimStatus, GroupStatus, MemberStatus, TaskStatus

HoldKind = Literal["held", "used"]


class GroupView(msgspec.Struct, frozen=True, kw_only=True):
    """One group, summarized: state, member counts by state, holds, pend reason."""

    id: str
    name: str
    owner: str
    priority: int
    submission_seq: int
    mode: str
    state: GroupStatus
    attempt: int
    releases: int = 0
    group_restarts: int = 0
    members: int = 0
    members_by_state: dict[str, int] = msgspec.field(default_factory=dict)
    tasks_desired: int = 0
    tasks_placed: int = 0
    tasks_held: int = 0
    gpu_placed: int = 0
    gpu_held: int = 0
    pend_reason: PendReason | None = None
    last_reason: str | None = None
    submitted_at_ns: int = 0
    placed_at_ns: int | None = None
    started_at_ns: int | None = None
    ended_at_ns: int | None = None
    reservation_deadline_ns: int | None = None
    barrier_deadline_ns: int | None = None
    retry_at_ns: int = 0
    last_event_at_ns: int = 0
    labels: dict[str, str] = msgspec.field(default_factory=dict)


class TaskView(msgspec.Struct, frozen=True, kw_only=True):
    """One task of a member as the host runs it (`costart.domain.states.TaskState`)."""

    index: int
    node: str
    attempt: int
    state: TaskStatus
    exit_code: int | None = None
    started_at_ns: int | None = None
    ended_at_ns: int | None = None
    claims: dict[str, ClaimStatus] = msgspec.field(default_factory=dict)


class MemberView(msgspec.Struct, frozen=True, kw_only=True):
    """One member: identity, state, tasks or replicas, nodes, claims, restarts."""

    group: str
    group_id: str
    name: str
    index: int
    kind: str
    owner: str
    profile: str
    state: MemberStatus
    desired: int
    min_start: int
    min_running: int
    placed: int = 0
    held: int = 0
    gpu_per_task: int = 0
    nodes: tuple[str, ...] = ()
    held_nodes: tuple[str, ...] = ()
    claims: dict[str, ClaimStatus] = msgspec.field(default_factory=dict)
    restarts: int = 0
    uncounted_restarts: int = 0
    failed_replicas: int = 0
    last_reason: str | None = None
    last_exit_code: int | None = None
    started_at_ns: int | None = None
    ended_at_ns: int | None = None
    attempt: int = 0
    running: int = 0
    tasks: tuple[TaskView, ...] = ()


class PendEntry(msgspec.Struct, frozen=True, kw_only=True):
    """One pend-reason change of a group, at its log position."""

    position: int
    at_ns: int
    reason: PendReason


class TimelineEntry(msgspec.Struct, frozen=True, kw_only=True):
    """One event of a group's history, as a line a person reads."""

    position: int
    at_ns: int
    event: str
    member: str | None = None
    detail: str = ""
    actor: str | None = None


class HoldView(msgspec.Struct, frozen=True, kw_only=True):
    """One task's capacity on a node: held by a reservation or used by a placement."""

    node: str
    group: str
    group_id: str
    member: str
    index: int
    kind: HoldKind
    gpu: int = 0
    cpu: int = 0
    mem_gb: int = 0
    running: bool = False


class Histogram(msgspec.Struct, kw_only=True):
    """A cumulative-bucket histogram of durations in integer nanoseconds."""

    bounds_ns: tuple[int, ...]
    counts: list[int]
    count: int = 0
    sum_ns: int = 0

    def observe(self, value_ns: int) -> None:
        """Count ``value_ns`` in the first bucket whose bound is >= it (or +Inf)."""
        for i, bound in enumerate(self.bounds_ns):
            if value_ns <= bound:
                self.counts[i] += 1
                break
        else:
            self.counts[-1] += 1
        self.count += 1
        self.sum_ns += value_ns


class GroupDetail(msgspec.Struct, frozen=True, kw_only=True):
    """Everything `describe group` shows: the group, its members, holds and history."""

    group: GroupView
    members: tuple[MemberView, ...]
    holds: tuple[HoldView, ...]
    pend_history: tuple[PendEntry, ...]
    events: tuple[TimelineEntry, ...]
