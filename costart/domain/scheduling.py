"""Placement decisions and timers applied to a group (docs/design.md §3.4, §4).

The placement step decides; these functions check that a decision fits the group's
state and spec, then record it. Timers (reservation and barrier deadlines) fire on
`on_tick` with the injected time, as do members' declared run-time limits.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

from costart.domain import events as ev
from costart.domain.aggregates import GroupUnit, MemberAggregate
from costart.domain.errors import DomainError, IllegalTransition
from costart.domain.events import Assignment, PendReason
from costart.domain.lifecycle import release_barrier_if_ready
from costart.domain.runtime_limits import (
    fire_runtime_limits,
    runtime_limit_may_be_due,
    runtime_wake_ns,
)
from costart.domain.spec_types import RESERVING_MODES
from costart.domain.states import GROUP_STARTED, GROUP_WAITING, GroupState
from costart.domain.teardown import release_and_retry
from costart.domain.world import World


def _check_assignments(member: MemberAggregate, new: Sequence[Assignment], already: int) -> None:
    taken = {a.index for a in member.state.assignments}
    indexes = [a.index for a in new]
    if len(set(indexes)) != len(indexes):
        raise DomainError(f"member {member.name}: duplicate task index in {indexes}")
    for a in new:
        if not a.node:
            raise DomainError(f"member {member.name}: task {a.index} has no node")
        if a.index < 0 or a.index in taken:
            raise DomainError(f"member {member.name}: task index {a.index} is taken or invalid")
    if already + len(new) > member.state.desired:
        raise DomainError(
            f"member {member.name}: {already + len(new)} tasks exceed desired {member.state.desired}"
        )


def place_group(
    unit: GroupUnit,
    assignments: Mapping[str, Sequence[Assignment]],
    at_ns: int,
    *,
    admitted_until_ns: int | None = None,
    estimates: tuple[ev.RuntimeEstimate, ...] = (),
) -> None:
    """Place the whole gang in one decision, then wait at the barrier (a borrower
    admitted on an estimate records until when, `costart.domain.backfill`)."""
    group = unit.group.state
    if group.status not in GROUP_WAITING:
        raise IllegalTransition(f"group {unit.name}", group.status, "place the group")
    unknown = sorted(set(assignments) - {m.name for m in unit.members})
    if unknown:
        raise DomainError(f"group {unit.name} has no member(s) {unknown}")
    for member in unit.members:
        given = tuple(assignments.get(member.name, ()))
        spec = member.state.spec
        if len(given) < spec.min_start:
            raise DomainError(
                f"member {member.name}: {len(given)} tasks placed, the gang needs {spec.min_start}"
            )
        _check_assignments(member, given, 0)
    for member in unit.members:
        member.trigger(ev.MemberPlaced, at_ns, assignments=tuple(assignments[member.name]))
    deadline = at_ns + group.spec.barrier.timeout_ns
    unit.group.trigger(
        ev.GroupPlaced,
        at_ns,
        attempt=group.attempt,
        barrier_deadline_ns=deadline,
        admitted_until_ns=admitted_until_ns,
        estimates=estimates,
    )
    release_barrier_if_ready(unit, at_ns)


def hold_capacity(unit: GroupUnit, holds: Mapping[str, Sequence[Assignment]], at_ns: int) -> None:
    """Open the reservation (first time) and add holds for some members' tasks."""
    group = unit.group.state
    if group.spec.placement.mode not in RESERVING_MODES:
        raise DomainError(f"group {unit.name} is in atomic mode: it holds nothing")
    if group.status not in GROUP_WAITING:
        raise IllegalTransition(f"group {unit.name}", group.status, "hold capacity")
    for name in sorted(holds):
        member = unit.member(name)
        _check_assignments(member, holds[name], len(member.state.held))
        held = {a.index for a in member.state.held}
        if any(a.index in held for a in holds[name]):
            raise DomainError(f"member {name}: a task is held twice")
    if group.status == "PENDING":
        deadline = at_ns + group.spec.placement.timeout_ns
        unit.group.trigger(ev.ReservationOpened, at_ns, attempt=group.attempt, deadline_ns=deadline)
    for member in unit.members:
        if holds.get(member.name):
            member.trigger(ev.MemberHeld, at_ns, assignments=tuple(holds[member.name]))


def place_member(
    unit: GroupUnit, member: str, assignments: Sequence[Assignment], at_ns: int
) -> None:
    """Place one member alone after the start: a restarting member, or new replicas."""
    group = unit.group.state
    if group.status not in GROUP_STARTED:
        raise IllegalTransition(f"group {unit.name}", group.status, "place a member alone")
    target = unit.member(member)
    if target.state.status not in ("RESTARTING", "RUNNING"):
        raise IllegalTransition(f"member {member}", target.state.status, "place alone")
    if target.state.status == "RUNNING" and target.state.spec.kind != "replica-set":
        raise IllegalTransition(f"member {member}", "RUNNING", "place more tasks of a job")
    if not assignments:
        raise DomainError(f"member {member}: nothing to place")
    _check_assignments(target, assignments, len(target.state.assignments))
    target.trigger(ev.MemberPlaced, at_ns, assignments=tuple(assignments))
    _recover_if_whole(unit, at_ns)


def _recover_if_whole(unit: GroupUnit, at_ns: int) -> None:
    if unit.group.state.status != "DEGRADED":
        return
    for member in unit.members:
        state = member.state
        if state.status == "FAILED" or len(state.assignments) < state.desired:
            return
    unit.group.trigger(ev.GroupRecovered, at_ns)


def release_group(unit: GroupUnit, reason: str, at_ns: int) -> None:
    """Give back everything held or placed before the start, then back off."""
    group = unit.group.state
    if group.status not in ("RESERVING", "PLACED"):
        raise IllegalTransition(f"group {unit.name}", group.status, "release")
    release_and_retry(unit, reason, at_ns, counts_attempt=True)


def set_pend_reason(unit: GroupUnit, reason: PendReason, at_ns: int) -> bool:
    """Record the pend reason only if it changed (no log flood). True if recorded."""
    if unit.group.state.pend_reason == reason:
        return False
    unit.group.trigger(ev.PendReasonChanged, at_ns, reason=reason)
    return True


TIMED: Final = frozenset({"RESERVING", "PLACED", *GROUP_STARTED})
"""The group statuses with a deadline (started groups: a member's ``max_runtime``):
`deadline_due` is False for every other status."""


def wake_ns(group: GroupState) -> int | None:
    """The time from which `deadline_due` holds for ``group`` as it now is (None: not
    before the group changes): its reservation or barrier deadline, or for a started
    group its first start plus its shortest ``max_runtime``."""
    status = group.status
    if status == "RESERVING":
        return group.reservation_deadline_ns
    if status == "PLACED":
        return group.barrier_deadline_ns
    return runtime_wake_ns(group)


def deadline_due(group: GroupState, now_ns: int) -> bool:
    """Whether `on_tick` would fire anything for this group (cheap: no unit needed)."""
    wake = wake_ns(group)
    return wake is not None and now_ns >= wake


def due_groups(world: World, now_ns: int) -> list[GroupState]:
    """The live groups a tick at ``now_ns`` fires timers for (`deadline_due`), in
    submission order: the plain scan of every live group, which
    `costart.deadline_index.DeadlineIndex` answers from what changed (and is tested
    against). Firing one group's timers never changes another group."""
    live = map(world.groups.__getitem__, world.live_names.values())
    # Most live groups have no deadline: the status test spares them a call.
    due = [g for g in live if g.status in TIMED and deadline_due(g, now_ns)]
    due.sort(key=submission_order)
    return due


def submission_order(group: GroupState) -> int:
    """A sort key: groups in the order they were submitted."""
    return group.submission_seq


def on_tick(unit: GroupUnit, now_ns: int) -> bool:
    """Fire due deadlines. True if anything was recorded."""
    group = unit.group.state
    deadline = group.reservation_deadline_ns
    if group.status == "RESERVING" and deadline is not None and now_ns >= deadline:
        unit.group.trigger(ev.ReservationTimedOut, now_ns, attempt=group.attempt)
        release_and_retry(unit, "reservation timed out", now_ns, counts_attempt=True)
        return True
    deadline = group.barrier_deadline_ns
    if group.status == "PLACED" and deadline is not None and now_ns >= deadline:
        unit.group.trigger(ev.BarrierTimedOut, now_ns, attempt=group.attempt)
        release_and_retry(unit, "barrier timed out: claims not READY", now_ns, counts_attempt=True)
        return True
    if runtime_limit_may_be_due(group, now_ns):
        return fire_runtime_limits(unit, now_ns)
    return False
