"""The domain events (docs/design.md §3.3): immutable msgspec structs, past tense.

Every event carries the aggregate it belongs to (``originator_id``, ``originator_version``),
its group (``group_id``) and the injected controller time ``at_ns``. They satisfy the
eventsourcing library's ``DomainEventProtocol``. Schema evolution: a new field always has
a default, so old records still decode (see ADR 0004).
"""

from __future__ import annotations

from typing import Annotated, Literal
from uuid import UUID

import msgspec
from msgspec import Meta

from costart.domain.actors import Actor
from costart.domain.spec_types import FailureAction, FailureReason, GroupSpec, MemberSpec


class Assignment(msgspec.Struct, frozen=True, gc=False, array_like=True):
    """Task (or replica) ``index`` of a member on ``node``."""

    index: int
    node: str


PendClass = Literal["capacity", "topology", "queue", "claims", "backoff", "infeasible"]


class PendReason(msgspec.Struct, frozen=True, gc=False, omit_defaults=True):
    """Why a group is not running (docs/design.md §3.5). Compared whole to detect a change.

    Only facts are stored; times and positions are rendered into words at display time
    (`costart.display.reasons`), so the words can say "in 40s" and the log holds no
    clock text. ``queue_position``: how many reservations are ahead (0: the head of the
    queue; people see it 1-based), recorded only up to three: further back it is None
    and the words say "more than 3" (a queue shift must not rewrite every reason behind
    it, ADR 0116). ``ahead``: those groups, by name (logs of earlier releases: the first
    three of any number).
    ``until_ns``: a backoff's retry time. ``planned_start_ns``/``planned_basis``: a
    ``plan-ahead`` reservation's planned start and what it rests on (ADR 0108); left out
    of the encoding when absent, so older reasons keep their bytes.
    """

    cls: Annotated[
        PendClass,
        Meta(
            description="why the group waits: capacity, topology, queue (behind other "
            "reservations), claims, backoff or infeasible (can never fit)"
        ),
    ]
    message: Annotated[
        str, Meta(description="the reason in words, without times (rendered at display time)")
    ]
    member: Annotated[
        str | None, Meta(description="the member that blocks the group, if one does")
    ] = None
    need: Annotated[str | None, Meta(description="what the blocking member needs")] = None
    best: Annotated[str | None, Meta(description="the best capacity available for it now")] = None
    queue_position: Annotated[
        int | None,
        Meta(
            description="how many reservations are ahead (0: the head of the queue), "
            "when at most 3 (None further back: the message says more than 3)"
        ),
    ] = None
    ahead: Annotated[
        tuple[str, ...], Meta(description="the groups ahead in the reservation queue, first first")
    ] = ()
    until_ns: Annotated[
        int | None,
        Meta(description="a backoff's retry time, controller nanoseconds since the Unix epoch"),
    ] = None
    planned_start_ns: Annotated[
        int | None,
        Meta(
            description="a plan-ahead reservation's planned start (shadow time), controller "
            "nanoseconds since the Unix epoch"
        ),
    ] = None
    planned_basis: Annotated[
        str | None,
        Meta(description="what the planned start rests on: limit (declared limits) or estimate"),
    ] = None


class RuntimeEstimate(msgspec.Struct, frozen=True, kw_only=True, gc=False, omit_defaults=True):
    """What a decision that rests on a member's expected runtime records of it (in its
    event), so the log says what the decision knew: ``runtime_ns`` expected from the
    member's start, its ``basis`` (``limit`` or ``estimate``), and for an estimate the
    ``samples`` it was made of, the nearest-rank ``percentile`` taken of them, their
    ``key`` (owner, workload, member) and whether the run had ``slipped`` past its first
    estimate. The percentile is recorded so a record still reads right after a release
    changes it."""

    member: str
    runtime_ns: int
    basis: Literal["limit", "estimate"]
    samples: int = 0
    percentile: int = 0
    key: str | None = None
    slipped: bool = False


class DomainEvent(
    msgspec.Struct, frozen=True, gc=False, kw_only=True, tag=True, omit_defaults=True
):
    """``actor``: who sent the command that wrote this event (None: costart's own
    placement step, or a record written before actors were kept). ``note``: why, when
    the event's own fields do not say (``reconciled: ...``)."""

    originator_id: UUID
    originator_version: int
    group_id: UUID
    at_ns: int
    actor: Actor | None = None
    note: str | None = None


# --- Group aggregate events -------------------------------------------------------------


class GroupSubmitted(DomainEvent, frozen=True):
    """A group was accepted: its validated spec (defaults filled in), its place in submission order and its members' ids."""

    spec: GroupSpec
    submission_seq: int
    member_ids: tuple[UUID, ...]


class ReservationOpened(DomainEvent, frozen=True):
    """The gang did not fit at once: the group holds capacity as it frees, until ``deadline_ns``."""

    attempt: int
    deadline_ns: int


class GroupPlaced(DomainEvent, frozen=True):
    """Every member is placed for this attempt; the group waits at the barrier.

    A borrower admitted on a learned runtime *estimate* (ADR 0121) records
    ``admitted_until_ns`` (placement time plus its gang's estimate) and the
    ``estimates`` it rested on: past that time a reservation may stop it. Both are left
    out of the encoding when absent, so every other placement keeps its bytes."""

    attempt: int
    barrier_deadline_ns: int
    admitted_until_ns: int | None = None
    estimates: tuple[RuntimeEstimate, ...] = ()


class PlacementReleased(DomainEvent, frozen=True):
    """The group gave back everything it held or used and waits ``retry_at_ns``."""

    reason: str
    retry_at_ns: int


class ReservationTimedOut(DomainEvent, frozen=True):
    """The reservation reached its deadline unplaced (a release follows)."""

    attempt: int


class BarrierTimedOut(DomainEvent, frozen=True):
    """Claims were not all READY by the barrier deadline (a release follows)."""

    attempt: int


class PendReasonChanged(DomainEvent, frozen=True):
    """Why the group waits changed (written only on a change, never per session)."""

    reason: PendReason


class BarrierReleased(DomainEvent, frozen=True):
    """Every member placed and every claim READY: the members may start."""

    attempt: int


class GroupDegraded(DomainEvent, frozen=True):
    """A tolerated failure left ``member`` short (``detail``); the group runs on."""

    member: str
    detail: str


class GroupRecovered(DomainEvent, frozen=True):
    """Every member is back at strength after a degradation."""


class GroupRestarted(DomainEvent, frozen=True):
    """Restart-group: the attempt counter moves on; members re-place as a gang."""

    attempt: int
    restarts: int
    member: str
    reason: FailureReason


class GroupSucceeded(DomainEvent, frozen=True):
    """The success rule holds; services are stopped and nothing is held."""


class GroupFailed(DomainEvent, frozen=True):
    """The group failed (``reason``); everything it held or ran is released."""

    member: str | None
    reason: str


class GroupCancelled(DomainEvent, frozen=True):
    """The group was cancelled by its owner or an admin; everything is released."""


# --- Member aggregate events ------------------------------------------------------------


class MemberCreated(DomainEvent, frozen=True):
    """A member of a newly submitted group, with its spec."""

    spec: MemberSpec


class MemberHeld(DomainEvent, frozen=True):
    """Capacity held for some tasks by an open reservation (accumulates)."""

    assignments: tuple[Assignment, ...]


class HoldLent(DomainEvent, frozen=True):
    """An open ``reserve-backfill`` reservation gave up these held tasks so that the lower
    group ``borrower`` runs on their capacity until the reservation needs it back. The
    capacity is counted once, as the borrower's use; it is still owed to the reservation,
    which claims it every session and stops a borrower still there (reason
    ``preempted``) when its gang can start."""

    assignments: tuple[Assignment, ...]
    borrower: str


class MemberPlaced(DomainEvent, frozen=True):
    """The member's tasks are placed: ``assignments`` are added to what it has."""

    assignments: tuple[Assignment, ...]


class MemberReleased(DomainEvent, frozen=True):
    """Everything held or placed for the member is given back; it is PENDING again."""

    reason: str


class ClaimReady(DomainEvent, frozen=True):
    """``attempt``: the member attempt the report named (None in records written before
    reports named one); ``task``: the task whose own claim it is (None: a member claim);
    ``key``: the reporter's idempotency key, if it sent one."""

    claim: str
    attempt: int | None = None
    key: str | None = None
    task: int | None = None


class ClaimFailed(DomainEvent, frozen=True):
    """A claim was reported FAILED: the member fails with reason claim-failed."""

    claim: str
    reason: str
    attempt: int | None = None
    key: str | None = None
    task: int | None = None


class MemberStarted(DomainEvent, frozen=True):
    """The member started: its task ``task`` of placement ``attempt`` was the first to
    start (records written before tasks were reported name none: every task started)."""

    task: int | None = None
    attempt: int | None = None
    key: str | None = None


class TaskStarted(DomainEvent, frozen=True):
    """Task ``task`` of the member's placement ``attempt`` started, the member already
    RUNNING (its first task's start is `MemberStarted`)."""

    task: int
    attempt: int
    key: str | None = None


class TaskSucceeded(DomainEvent, frozen=True):
    """Task ``task`` of a job's placement ``attempt`` exited successfully."""

    task: int
    attempt: int
    exit_code: int = 0
    key: str | None = None


class MemberFailed(DomainEvent, frozen=True):
    """The member failed, or (``index``) its task ``index`` did: a replica set loses that
    replica and lives on with the rest; a job's task failure is the job's failure.
    ``attempt``: the placement attempt the report named (None: the member as a whole,
    or a record written before reports named one)."""

    reason: FailureReason
    exit_code: int | None
    action: FailureAction
    index: int | None = None
    attempt: int | None = None
    key: str | None = None


class MemberRestarted(DomainEvent, frozen=True):
    """The member (alone) goes back to PENDING for re-placement."""

    restarts: int
    counted: bool


class MemberScaled(DomainEvent, frozen=True):
    """Desired replicas changed; ``removed`` are the replicas stopped by a scale-down."""

    replicas: int
    removed: tuple[Assignment, ...] = ()


class MemberSucceeded(DomainEvent, frozen=True):
    """Every task of a job succeeded."""


class MemberStopped(DomainEvent, frozen=True):
    """The member was stopped because its group ended (succeeded, failed or was cancelled)."""

    reason: str


# --- Cluster events (the cluster's own stream, ``originator_id == group_id == CLUSTER_ID``)

NodeStatus = Literal["up", "drained", "down"]


class NodeStatusChanged(DomainEvent, frozen=True):
    """The embedding controller reported a node up, drained (no new work) or down."""

    node: str
    status: NodeStatus


GROUP_EVENTS: tuple[type[DomainEvent], ...] = (
    GroupSubmitted,
    ReservationOpened,
    GroupPlaced,
    PlacementReleased,
    ReservationTimedOut,
    BarrierTimedOut,
    PendReasonChanged,
    BarrierReleased,
    GroupDegraded,
    GroupRecovered,
    GroupRestarted,
    GroupSucceeded,
    GroupFailed,
    GroupCancelled,
)
MEMBER_EVENTS: tuple[type[DomainEvent], ...] = (
    MemberCreated,
    MemberHeld,
    HoldLent,
    MemberPlaced,
    MemberReleased,
    ClaimReady,
    ClaimFailed,
    MemberStarted,
    TaskStarted,
    TaskSucceeded,
    MemberFailed,
    MemberRestarted,
    MemberScaled,
    MemberSucceeded,
    MemberStopped,
)
CLUSTER_EVENTS: tuple[type[DomainEvent], ...] = (NodeStatusChanged,)
ALL_EVENTS: tuple[type[DomainEvent], ...] = GROUP_EVENTS + MEMBER_EVENTS + CLUSTER_EVENTS
AnyEvent = (
    GroupSubmitted
    | ReservationOpened
    | GroupPlaced
    | PlacementReleased
    | ReservationTimedOut
    | BarrierTimedOut
    | PendReasonChanged
    | BarrierReleased
    | GroupDegraded
    | GroupRecovered
    | GroupRestarted
    | GroupSucceeded
    | GroupFailed
    | GroupCancelled
    | MemberCreated
    | MemberHeld
    | HoldLent
    | MemberPlaced
    | MemberReleased
    | ClaimReady
    | ClaimFailed
    | MemberStarted
    | TaskStarted
    | TaskSucceeded
    | MemberFailed
    | MemberRestarted
    | MemberScaled
    | MemberSucceeded
    | MemberStopped
    | NodeStatusChanged
)
