"""Declared run-time limits (``max_runtime`` on a member), enforced by the timer tick.

A member that has run for its limit fails with reason ``max-runtime`` and its group's
failure policy decides, as for any failure (the limit is the workload's own: it consumes
a restart budget). The limit counts from the member's start (`MemberStarted`), so a
restarted member gets a fresh one.
"""

from __future__ import annotations

from costart.domain.aggregates import GroupUnit
from costart.domain.failures import fail_member
from costart.domain.spec_types import GroupSpec
from costart.domain.states import GROUP_STARTED, GroupState, MemberState


def shortest_limit_ns(spec: GroupSpec) -> int | None:
    """The smallest ``max_runtime`` of the group's members (None: no member has one)."""
    shortest: int | None = None
    for member in spec.members:  # every tick, for every started group: no list built
        limit = member.max_runtime_ns
        if limit is not None and (shortest is None or limit < shortest):
            shortest = limit
    return shortest


def runtime_wake_ns(group: GroupState) -> int | None:
    """The earliest time a member of the started ``group`` can have run for its limit:
    the group's first start plus the shortest limit (None: not started, or no limit)."""
    started = group.started_at_ns
    if started is None or group.status not in GROUP_STARTED:
        return None
    shortest = shortest_limit_ns(group.spec)
    return None if shortest is None else started + shortest


def runtime_limit_may_be_due(group: GroupState, now_ns: int) -> bool:
    """Cheap test before loading members: no member can have run for its limit before
    `runtime_wake_ns`."""
    wake = runtime_wake_ns(group)
    return wake is not None and now_ns >= wake


def fire_runtime_limits(unit: GroupUnit, now_ns: int) -> bool:
    """Fail each running member that has run for its ``max_runtime`` (reason
    ``max-runtime``; the failure policy decides). True if anything was recorded."""
    fired = False
    for member in unit.members:
        state = member.state
        limit = state.spec.max_runtime_ns
        if (
            limit is None
            or unit.group.state.status not in GROUP_STARTED
            or state.status != "RUNNING"
            or state.started_at_ns is None
            or now_ns < state.started_at_ns + limit
        ):
            continue
        fail_member(unit, member.name, "max-runtime", None, None, now_ns)
        fired = True
    return fired


def next_runtime_deadline(group: GroupState, members: list[MemberState]) -> int | None:
    """When the first of the group's running members reaches its limit (None: never)."""
    if group.status not in GROUP_STARTED:
        return None
    best: int | None = None
    for member in members:
        limit = member.spec.max_runtime_ns
        if limit is None or member.status != "RUNNING" or member.started_at_ns is None:
            continue
        at = member.started_at_ns + limit
        if best is None or at < best:
            best = at
    return best
