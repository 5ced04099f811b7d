"""The commands of a group's life (docs/design.md §3.2, §5): submit, the start barrier, success,
scaling and cancel (the reports of tasks and claims are `costart.domain.reports`). Each works on one `GroupUnit`; an illegal command
raises before any event is recorded."""

from __future__ import annotations

from costart.domain import events as ev
from costart.domain import limits
from costart.domain.actors import Actor
from costart.domain.aggregates import GroupUnit
from costart.domain.errors import Conflict, DomainError, IllegalTransition
from costart.domain.fold import new_group, new_member
from costart.domain.ids import group_id, member_ids
from costart.domain.spec_types import GroupSpec
from costart.domain.states import GROUP_STARTED, GroupState, MemberState
from costart.domain.teardown import fail_group, stop_live_members
from costart.domain.world import World


def submit(world: World, spec: GroupSpec, at_ns: int, actor: Actor | None = None) -> GroupUnit:
    """A new group and its members, submitted by ``actor``. Raises `Conflict` if a live
    group has the name."""
    if spec.name in world.live_names:
        raise Conflict(f"a live group named {spec.name!r} already exists")
    seq = world.submissions + 1
    gid = group_id(seq, spec.name)
    mids = member_ids(gid, [m.name for m in spec.members])
    submitted = ev.GroupSubmitted(
        originator_id=gid,
        originator_version=1,
        group_id=gid,
        at_ns=at_ns,
        actor=actor,
        spec=spec,
        submission_seq=seq,
        member_ids=mids,
    )
    created = [
        ev.MemberCreated(
            originator_id=mid,
            originator_version=1,
            group_id=gid,
            at_ns=at_ns,
            actor=actor,
            spec=mspec,
        )
        for mid, mspec in zip(mids, spec.members, strict=True)
    ]
    group = new_group(submitted)
    unit = GroupUnit.from_events(group, [new_member(e, group) for e in created], actor)
    unit.add_events([submitted, *created])
    return unit


def may_start(group: GroupState, member: MemberState) -> bool:
    """The dispatch barrier: true only once the current attempt's barrier was released
    and the member is placed with every claim READY (or already running)."""
    return (
        group.status in GROUP_STARTED
        and group.barrier_released
        and member.status in ("READY", "RUNNING")
    )


def _gang_ready(unit: GroupUnit) -> bool:
    for member in unit.members:
        state = member.state
        if state.status != "READY" or state.placed_count < state.spec.min_start:
            return False
    return True


def release_barrier_if_ready(unit: GroupUnit, at_ns: int) -> bool:
    """Write `BarrierReleased` exactly once per attempt, when the whole gang is READY."""
    group = unit.group.state
    if group.status != "PLACED" or group.barrier_released or not _gang_ready(unit):
        return False
    unit.group.trigger(ev.BarrierReleased, at_ns, attempt=group.attempt)
    return True


def _success_reached(unit: GroupUnit) -> bool:
    success = unit.group.state.spec.success
    jobs = [m.state for m in unit.members if m.state.spec.kind == "job"]
    if success.when == "any-job":
        return any(j.status == "SUCCEEDED" for j in jobs)
    if success.when == "members":
        named = [m.state for m in unit.members if m.name in success.members]
        return all(m.status == "SUCCEEDED" for m in named)
    # all-jobs: every job ended, at least one succeeded (tolerated failures don't block).
    return (
        bool(jobs)
        and all(j.is_terminal for j in jobs)
        and any(j.status == "SUCCEEDED" for j in jobs)
    )


def conclude_if_done(unit: GroupUnit, at_ns: int) -> None:
    """Apply the success policy; a group whose every job failed (tolerated) fails."""
    group = unit.group.state
    if group.status not in GROUP_STARTED:
        return
    if _success_reached(unit):
        stop_live_members(unit, "group succeeded", at_ns)
        unit.group.trigger(ev.GroupSucceeded, at_ns)
        return
    jobs = [m.state for m in unit.members if m.state.spec.kind == "job"]
    if jobs and all(j.status == "FAILED" for j in jobs):
        fail_group(unit, None, "every job failed", at_ns)


def scale_member(unit: GroupUnit, member: str, replicas: int, at_ns: int) -> None:
    """Change a replica set's desired replicas. Scale-down stops the highest replicas now;
    scale-up is placed replica by replica by the placement step (not as a gang)."""
    target = unit.member(member)
    spec = target.state.spec
    if spec.kind != "replica-set":
        raise DomainError(f"member {member} is a job; only a replica-set scales")
    if not spec.min_running <= replicas <= limits.MAX_REPLICAS_PER_MEMBER:
        raise DomainError(
            f"replicas for {member} must be between min_running ({spec.min_running}) "
            f"and {limits.MAX_REPLICAS_PER_MEMBER} (got {replicas})"
        )
    if unit.group.state.is_terminal:
        raise IllegalTransition(f"group {unit.name}", unit.group.state.status, "scale")
    by_index = sorted(target.state.assignments, key=lambda a: a.index)
    removed = tuple(by_index[replicas:])
    target.trigger(ev.MemberScaled, at_ns, replicas=replicas, removed=removed)


def cancel(unit: GroupUnit, at_ns: int) -> None:
    """Tear everything down from any live state."""
    if unit.group.state.is_terminal:
        raise IllegalTransition(f"group {unit.name}", unit.group.state.status, "cancel")
    stop_live_members(unit, "group cancelled", at_ns)
    unit.group.trigger(ev.GroupCancelled, at_ns)
