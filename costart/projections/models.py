"""The display views' rows: what `costart get`, `describe` and the REST API show.

Every row is a frozen msgspec struct derived from the domain state by
`costart.projections.derive`; rows are stored canonically encoded, so a view rebuilt from
the log equals the incrementally built one byte for byte. New fields get defaults (the
views are rebuildable, but old rows must still decode until they are).
"""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec
from msgspec import Meta

from costart.domain import RunSpec
from costart.domain.events import PendReason
from costart.domain.states import ClaimStatus, GroupStatus, MemberStatus, TaskStatus

HoldKind = Literal["held", "used"]


class GroupView(msgspec.Struct, frozen=True, kw_only=True):
    """One group, summarized: state, member counts by state, holds, pend reason."""

    id: Annotated[
        str,
        Meta(
            description="the group's id (stable across its whole life; a later group of "
            "the same name has another)"
        ),
    ]
    name: Annotated[str, Meta(description="the group's name")]
    owner: Annotated[str, Meta(description="the user who owns the group")]
    priority: Annotated[int, Meta(description="higher is placed first")]
    submission_seq: Annotated[int, Meta(description="the group's place in submission order")]
    mode: Annotated[str, Meta(description="placement mode: atomic or reserve")]
    state: Annotated[GroupStatus, Meta(description="the group's state (docs/design.md §3.2)")]
    attempt: Annotated[
        int,
        Meta(
            description="the placement attempt, from 1; a release or group restart starts the next"
        ),
    ]
    releases: Annotated[
        int, Meta(description="how many times the group's placement was released")
    ] = 0
    group_restarts: Annotated[
        int, Meta(description="how many times the whole group was restarted")
    ] = 0
    members: Annotated[int, Meta(description="how many members the group has")] = 0
    members_by_state: Annotated[
        dict[str, int], Meta(description="member count per member state")
    ] = msgspec.field(default_factory=dict)
    tasks_desired: Annotated[
        int, Meta(description="tasks (or replicas) desired over all members")
    ] = 0
    tasks_placed: Annotated[int, Meta(description="tasks placed on nodes")] = 0
    tasks_held: Annotated[int, Meta(description="tasks holding capacity in a reservation")] = 0
    gpu_placed: Annotated[int, Meta(description="GPUs of placed tasks")] = 0
    gpu_held: Annotated[int, Meta(description="GPUs held by the reservation")] = 0
    pend_reason: Annotated[
        PendReason | None,
        Meta(description="why the group is not running now (null when nothing holds it back)"),
    ] = None
    last_reason: Annotated[
        str | None,
        Meta(
            description="the last cause that changed the group's course (a release, failure or end)"
        ),
    ] = None
    submitted_at_ns: Annotated[
        int, Meta(description="when the group was submitted, nanoseconds since the Unix epoch")
    ] = 0
    placed_at_ns: Annotated[
        int | None, Meta(description="when the group was last placed (null: not placed)")
    ] = None
    started_at_ns: Annotated[
        int | None, Meta(description="when its start barrier was released (null: not started)")
    ] = None
    ended_at_ns: Annotated[
        int | None, Meta(description="when it reached a terminal state (null: not ended)")
    ] = None
    reservation_deadline_ns: Annotated[
        int | None, Meta(description="when an open reservation expires (null: none open)")
    ] = None
    barrier_deadline_ns: Annotated[
        int | None, Meta(description="when the start barrier times out (null: none open)")
    ] = None
    retry_at_ns: Annotated[
        int, Meta(description="after a release, the earliest time of the next attempt (0: none)")
    ] = 0
    last_event_at_ns: Annotated[int, Meta(description="the time of the group's latest event")] = 0
    labels: Annotated[dict[str, str], Meta(description="the group's labels, key to value")] = (
        msgspec.field(default_factory=dict)
    )
    admitted_until_ns: Annotated[
        int | None,
        Meta(
            description="a group started ahead of a reservation on a runtime estimate: when "
            "the estimate runs out; past it the reservation may stop the group (null: not "
            "admitted on an estimate)"
        ),
    ] = None


class TaskView(msgspec.Struct, frozen=True, kw_only=True):
    """One task of a member as the host runs it (`costart.domain.states.TaskState`)."""

    index: Annotated[int, Meta(description="the task's index within its member")]
    node: Annotated[str, Meta(description="the node it runs on")]
    attempt: Annotated[int, Meta(description="the attempt it belongs to")]
    state: Annotated[TaskStatus, Meta(description="the task's state")]
    exit_code: Annotated[
        int | None, Meta(description="the exit code of its process (null: not exited)")
    ] = None
    started_at_ns: Annotated[
        int | None, Meta(description="when it started (null: not started)")
    ] = None
    ended_at_ns: Annotated[int | None, Meta(description="when it ended (null: not ended)")] = None
    claims: Annotated[
        dict[str, ClaimStatus], Meta(description="per-task claims and their status")
    ] = msgspec.field(default_factory=dict)
    log: Annotated[
        str | None,
        Meta(
            description="where the node agent writes the task's output, on its node "
            "(null: the member has no run table)"
        ),
    ] = None


class MemberView(msgspec.Struct, frozen=True, kw_only=True):
    """One member: identity, state, tasks or replicas, nodes, claims, restarts."""

    group: Annotated[str, Meta(description="the group's name")]
    group_id: Annotated[str, Meta(description="the group's id")]
    name: Annotated[str, Meta(description="the member's name")]
    index: Annotated[int, Meta(description="the member's place in the spec")]
    kind: Annotated[str, Meta(description="job or replica-set")]
    owner: Annotated[str, Meta(description="the user who owns the member")]
    profile: Annotated[str, Meta(description="the member's application profile")]
    state: Annotated[MemberStatus, Meta(description="the member's state (docs/design.md §3.2)")]
    desired: Annotated[int, Meta(description="desired tasks (job) or replicas (replica set)")]
    min_start: Annotated[int, Meta(description="replicas needed to start (the start quorum)")]
    min_running: Annotated[int, Meta(description="replicas below which a tolerating group fails")]
    placed: Annotated[int, Meta(description="tasks placed on nodes")] = 0
    held: Annotated[int, Meta(description="tasks holding capacity in a reservation")] = 0
    gpu_per_task: Annotated[int, Meta(description="GPUs each task requests")] = 0
    nodes: Annotated[tuple[str, ...], Meta(description="the nodes its placed tasks run on")] = ()
    held_nodes: Annotated[
        tuple[str, ...], Meta(description="the nodes holding capacity for it")
    ] = ()
    claims: Annotated[
        dict[str, ClaimStatus], Meta(description="each member claim and its status")
    ] = msgspec.field(default_factory=dict)
    restarts: Annotated[int, Meta(description="restarts that consumed the member's budget")] = 0
    uncounted_restarts: Annotated[
        int, Meta(description="restarts after node loss or preemption (never counted)")
    ] = 0
    failed_replicas: Annotated[
        int, Meta(description="replicas that failed under a tolerate policy")
    ] = 0
    last_reason: Annotated[str | None, Meta(description="the last failure or end reason")] = None
    last_exit_code: Annotated[
        int | None, Meta(description="the exit code of its last failed task")
    ] = None
    started_at_ns: Annotated[
        int | None, Meta(description="when the member started (null: not started)")
    ] = None
    ended_at_ns: Annotated[int | None, Meta(description="when it ended (null: not ended)")] = None
    attempt: Annotated[int, Meta(description="the group attempt the member's state belongs to")] = 0
    running: Annotated[int, Meta(description="tasks running now")] = 0
    tasks: Annotated[tuple[TaskView, ...], Meta(description="its tasks as the host runs them")] = ()
    run: Annotated[
        RunSpec | None,
        Meta(description="how a node agent runs each task (null: no run table)"),
    ] = None


class PendEntry(msgspec.Struct, frozen=True, kw_only=True):
    """One pend-reason change of a group, at its log position."""

    position: Annotated[int, Meta(description="the log position of the change")]
    at_ns: Annotated[
        int, Meta(description="when the reason changed, nanoseconds since the Unix epoch")
    ]
    reason: Annotated[PendReason, Meta(description="the new reason")]


class TimelineEntry(msgspec.Struct, frozen=True, kw_only=True):
    """One event of a group's history, as a line a person reads."""

    position: Annotated[int, Meta(description="the event's log position")]
    at_ns: Annotated[int, Meta(description="when it happened, nanoseconds since the Unix epoch")]
    event: Annotated[str, Meta(description="the event's type, e.g. MemberPlaced")]
    member: Annotated[str | None, Meta(description="the member it is about, if one")] = None
    detail: Annotated[str, Meta(description="what happened, in words")] = ""
    actor: Annotated[
        str | None, Meta(description="who sent the command behind it (null: costart itself)")
    ] = None


class HoldView(msgspec.Struct, frozen=True, kw_only=True):
    """One task's capacity on a node: held by a reservation or used by a placement."""

    node: Annotated[str, Meta(description="the node")]
    group: Annotated[str, Meta(description="the group's name")]
    group_id: Annotated[str, Meta(description="the group's id")]
    member: Annotated[str, Meta(description="the member's name")]
    index: Annotated[int, Meta(description="the task's index")]
    kind: Annotated[HoldKind, Meta(description="held (a reservation) or placed")]
    gpu: Annotated[int, Meta(description="GPUs it takes on the node")] = 0
    cpu: Annotated[int, Meta(description="CPUs it takes on the node")] = 0
    mem_gb: Annotated[int, Meta(description="memory it takes on the node, GB")] = 0
    running: Annotated[bool, Meta(description="whether the task runs")] = False


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
