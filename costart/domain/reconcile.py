"""Reconcile (docs/design.md §8): bring costart's state to the host's after they diverged.

The host owns the truth about tasks and nodes: which tasks of which member placements
exist and run, on which node, which nodes are up, and how many replicas a replica set
should have. `reconcile_group` changes one group until costart keeps live (placed or
running) exactly the tasks the host has, each event noting why
(``reconciled: ...``):

- a task costart keeps live that the host does not have (cancelled in the host's own
  tools, lost with a node while costart was down) ends: before the start the group is
  released and retried; after it the task failed (``node-lost`` if its node is down,
  else ``preempted`` — the host's doing, never a restart budget's) and the group's
  failure policy decides;
- a task the host runs that costart had placed starts (the barrier permitting);
- a replica set the host scaled is scaled to the host's count.

What costart cannot take from the host (a task it does not keep, or one running before
its group's barrier) is returned for the host to stop: costart never adopts a start the
barrier did not allow.
"""

from __future__ import annotations

from collections.abc import Mapping

import msgspec

from costart.domain import events as ev
from costart.domain import limits
from costart.domain.aggregates import GroupUnit
from costart.domain.errors import NotFound
from costart.domain.failures import fail_member
from costart.domain.lifecycle import may_start, scale_member
from costart.domain.spec_types import FailureReason
from costart.domain.states import GROUP_STARTED, GROUP_TERMINAL, TASK_LIVE, TaskState
from costart.domain.teardown import release_and_retry


class HostTask(msgspec.Struct, frozen=True, gc=False):
    """One task as the host has it: task ``task`` of ``member`` (``"GROUP/MEMBER"``)
    from the member's placement ``attempt``, on ``node``; ``running`` once started."""

    member: str
    task: int
    attempt: int
    node: str
    running: bool = False


class HostView(msgspec.Struct, frozen=True, gc=False):
    """The host's truth. ``tasks``: every task of costart's groups it has (a live group's
    task missing here is gone). ``nodes``: the status of the nodes it reports (nodes not
    named are left as they are). ``replicas``: replica sets whose count the host set."""

    tasks: tuple[HostTask, ...] = ()
    nodes: dict[str, ev.NodeStatus] = msgspec.field(default_factory=dict)
    replicas: dict[str, int] = msgspec.field(default_factory=dict)

    def __post_init__(self) -> None:
        if len(self.tasks) > limits.MAX_HOST_TASKS:
            raise ValueError(f"a host view holds at most {limits.MAX_HOST_TASKS} tasks")
        seen: set[tuple[str, int]] = set()
        for task in self.tasks:
            key = (task.member, task.task)
            if key in seen:
                raise ValueError(f"host view names task {task.task} of {task.member} twice")
            seen.add(key)

    def by_task(self, group: str) -> dict[tuple[str, int], HostTask]:
        """The group's tasks, by (member name, task index)."""
        prefix = f"{group}/"
        return {
            (t.member.removeprefix(prefix), t.task): t
            for t in self.tasks
            if t.member.startswith(prefix)
        }


def _matches(task: TaskState, host: HostTask | None) -> bool:
    return host is not None and host.attempt == task.attempt and host.node == task.node


def _first_divergence(
    unit: GroupUnit, host: Mapping[tuple[str, int], HostTask]
) -> tuple[str, TaskState, HostTask | None] | None:
    """The first live task (spec order, then index) costart and the host disagree on."""
    for member in unit.members:
        for task in member.state.tasks:
            if task.status not in TASK_LIVE:
                continue
            theirs = host.get((member.name, task.index))
            if not _matches(task, theirs):
                return member.name, task, theirs
            assert theirs is not None  # _matches
            running = task.status == "RUNNING"
            if theirs.running != running and (running or _may_start(unit, member.name)):
                return member.name, task, theirs
    return None


def _may_start(unit: GroupUnit, member: str) -> bool:
    return may_start(unit.group.state, unit.member(member).state)


def _scale_to_host(unit: GroupUnit, replicas: Mapping[str, int], at_ns: int) -> None:
    for member in unit.members:
        wanted = replicas.get(member.name)
        state = member.state
        if wanted is None or state.spec.kind != "replica-set" or wanted == state.desired:
            continue
        if not state.spec.min_running <= wanted <= limits.MAX_REPLICAS_PER_MEMBER:
            continue  # the host runs it below costart's floor: its failures will say so
        unit.set_note(f"reconciled: scaled to {wanted} by the host")
        scale_member(unit, member.name, wanted, at_ns)


def reconcile_group(
    unit: GroupUnit,
    host: Mapping[tuple[str, int], HostTask],
    replicas: Mapping[str, int],
    down: frozenset[str],
    at_ns: int,
) -> None:
    """Change one live group until its live tasks are the host's ``host`` tasks (see
    the module). ``replicas``: the host's counts of this group's replica sets, by member
    name; ``down``: the nodes down after the host's report."""
    if unit.group.state.status in GROUP_TERMINAL:
        return
    _scale_to_host(unit, replicas, at_ns)
    # Each step can end, release or restart more than one task: look again after each.
    for _ in range(sum(len(m.state.tasks) for m in unit.members) + 1):
        found = _first_divergence(unit, host)
        group = unit.group.state
        if found is None or group.status in GROUP_TERMINAL:
            return
        member, task, theirs = found
        where = f"task {task.index} of attempt {task.attempt}"
        if _matches(task, theirs) and theirs is not None and theirs.running:
            unit.set_note("reconciled: running on the host")
            started = (
                ev.TaskStarted
                if unit.member(member).state.status == "RUNNING"
                else ev.MemberStarted
            )
            unit.member(member).trigger(started, at_ns, task=task.index, attempt=task.attempt)
            continue
        why = "stopped on the host" if _matches(task, theirs) else "cancelled by the host"
        unit.set_note(f"reconciled: {member} {where} {why}")
        if group.status not in GROUP_STARTED:
            release_and_retry(
                unit, f"reconciled: {member} {where} {why}", at_ns, counts_attempt=False
            )
            return
        reason: FailureReason = "node-lost" if task.node in down else "preempted"
        fail_member(unit, member, reason, None, task.index, at_ns, task.attempt)
    raise AssertionError("reconcile did not converge")  # each step ends a live task


def must_stop(unit: GroupUnit, host: Mapping[tuple[str, int], HostTask]) -> list[HostTask]:
    """The group's host tasks costart does not keep (or keeps but may not start): the
    host should stop them."""
    stop = []
    for (member, index), theirs in sorted(host.items()):
        try:
            state = unit.member(member).state
        except NotFound:
            stop.append(theirs)
            continue
        ours = state.task(index)
        kept = ours is not None and ours.status in TASK_LIVE and _matches(ours, theirs)
        if not kept or (theirs.running and ours is not None and ours.status != "RUNNING"):
            stop.append(theirs)
    return stop
