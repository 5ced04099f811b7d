"""The invariants of docs/design.md §3.4, checked over the whole state (and the event stream).

`check_world` inspects a `World`; `EventAudit` follows the event stream for the rules that
are about history (barrier once per attempt, start only after the barrier, terminal groups
never change, a node-lost or preempted failure never consumes a budget). Both raise
`InvariantViolation` naming the rule, group and member. Used by tests, the simulator and
replay; #5 (deadlock freedom) is the placement step's rule and is checked there.

#3 with backfill (ADR 0045): a reservation that lends a held task gives the hold up
(`HoldLent`) before the borrower is placed there, so lent capacity is counted once — as
the borrower's placement — and "holds + placements on a node never exceed its capacity"
holds unchanged; what the reservation is still owed is a claim of the placement step,
never a hold.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any
from uuid import UUID

from costart.domain import events as ev
from costart.domain.capacity import Capacity
from costart.domain.errors import InvariantViolation
from costart.domain.spec_types import BUDGET_FREE_REASONS, FailureRule
from costart.domain.states import GROUP_STARTED, GROUP_TERMINAL, GroupState, MemberState
from costart.domain.world import World


def _fail(rule: str, group: GroupState, member: MemberState | None, detail: str) -> None:
    raise InvariantViolation(rule, group.name, member.name if member else None, detail)


def _check_all_or_nothing(group: GroupState, members: list[MemberState]) -> None:
    started = group.status in GROUP_STARTED
    if started and not group.barrier_released:
        _fail("#1 all-or-nothing", group, None, "running without a barrier release this attempt")
    if group.status in ("PENDING", "RESERVING", "PLACED") and group.barrier_released:
        _fail("#2 barrier once per attempt", group, None, "barrier released before placement")
    for member in members:
        if member.status == "RUNNING" and not started:
            _fail("#1 all-or-nothing", group, member, f"RUNNING while group is {group.status}")


def _check_no_leaked_holds(group: GroupState, members: list[MemberState]) -> None:
    for member in members:
        if group.status in GROUP_TERMINAL and (member.held or member.assignments):
            _fail("#7 terminal groups hold nothing", group, member, "still holds capacity")
        if group.status == "PENDING" and (member.held or member.assignments):
            _fail("#4 no leaked holds", group, member, "holds capacity while the group is PENDING")
        if member.is_terminal and member.held:
            _fail("#4 no leaked holds", group, member, f"{member.status} but holds capacity")
        # A succeeded job's tasks keep their nodes (`_PLACED_TASK`); a failed one's do not.
        if member.status == "FAILED" and member.assignments:
            _fail("#4 no leaked holds", group, member, "FAILED but holds capacity")
        if group.status == "RESERVING" and member.assignments:
            _fail("#4 no leaked holds", group, member, "placed tasks during a reservation")


_PLACED_TASK = frozenset({"PLACED", "RUNNING", "SUCCEEDED"})  # a job's done task keeps its node


def _check_tasks(group: GroupState, members: list[MemberState]) -> None:
    """Per-task state agrees with the member's (docs/design.md §8): every placed task is a live
    task of a placement the member made, a task runs only in a running member (#1 per
    task), and a job succeeded only when every task of its last placement did."""
    for member in members:
        placed = {a.index: a.node for a in member.assignments}
        for task in member.tasks:
            if task.attempt > member.attempt or task.attempt < 1:
                _fail("tasks", group, member, f"task {task.index} has attempt {task.attempt}")
            if task.status in ("PLACED", "RUNNING") and placed.get(task.index) != task.node:
                _fail("tasks", group, member, f"task {task.index} is {task.status} but not placed")
            if task.status == "RUNNING" and member.status != "RUNNING":
                _fail(
                    "#1 all-or-nothing",
                    group,
                    member,
                    f"task {task.index} runs in a {member.status} member",
                )
        for index, node in placed.items():
            newest = member.task(index)
            if newest is None or newest.node != node or newest.status not in _PLACED_TASK:
                _fail("tasks", group, member, f"placed task {index} on {node} has no live task")
        if member.status == "READY" and not member.claims_ready:
            _fail("#1 all-or-nothing", group, member, "READY with a claim not READY")
        if member.status == "SUCCEEDED" and member.tasks:
            last = [t for t in member.tasks if t.attempt == member.attempt]
            if len(last) < member.spec.count or any(t.status != "SUCCEEDED" for t in last):
                _fail("tasks", group, member, "SUCCEEDED before every task of its placement")


def _member_budget(rules: list[FailureRule], member: str) -> int:
    """The largest budget of the restart rules that cover ``member`` (0 if none do)."""
    return max((r.max_restarts for r in rules if not r.members or member in r.members), default=0)


def _check_budgets(group: GroupState, members: list[MemberState]) -> None:
    spec = group.spec
    if group.group_restarts > spec.failure.max_group_restarts:
        _fail(
            "#6 restart budgets",
            group,
            None,
            f"{group.group_restarts} group restarts > budget {spec.failure.max_group_restarts}",
        )
    rules = [r for r in spec.failure.rules if r.action == "restart-member"]
    default = spec.failure.default_max_restarts if spec.failure.default == "restart-member" else 0
    for member in members:
        budget = max(_member_budget(rules, member.name), default)  # 0 without a restart rule
        if member.restarts > budget:
            _fail("#6 restart budgets", group, member, f"{member.restarts} restarts > {budget}")


def _check_capacity(world: World, capacities: Mapping[str, Capacity]) -> None:
    """#3: per node, every live member's holds plus placements (a lent hold is no longer
    a hold: it counts once, as its borrower's placement) within the node's capacity."""
    used: dict[str, list[int]] = {}
    owner: dict[str, tuple[GroupState, MemberState]] = {}
    for group in world.groups_in_order():
        for member in world.members_of(group):
            shape = member.spec.shape
            for a in (*member.held, *member.assignments):
                totals = used.setdefault(a.node, [0, 0, 0])
                totals[0] += shape.gpu
                totals[1] += shape.cpu
                totals[2] += shape.mem_gb
                owner[a.node] = (group, member)
    for node in sorted(used):
        cap = capacities.get(node)
        gpu, cpu, mem = used[node]
        group, member = owner[node]
        if cap is None:
            _fail("#3 no overcommit", group, member, f"uses unknown node {node}")
        elif gpu > cap.gpu or cpu > cap.cpu or mem > cap.mem_gb:
            _fail(
                "#3 no overcommit",
                group,
                member,
                f"node {node} holds gpu {gpu}/{cap.gpu}, cpu {cpu}/{cap.cpu}, mem {mem}/{cap.mem_gb}",
            )


def check_group(group: GroupState, members: list[MemberState]) -> None:
    """Raise `InvariantViolation` on the first rule about one group (all but #3, which
    is about nodes) that ``group`` with its ``members`` (in spec order) breaks."""
    _check_all_or_nothing(group, members)
    _check_no_leaked_holds(group, members)
    _check_budgets(group, members)
    _check_tasks(group, members)


def check_world(world: World, capacities: Mapping[str, Capacity] | None = None) -> None:
    """Raise `InvariantViolation` on the first rule the state breaks: the groups' rules
    group by group in submission order, then overcommit node by node in name order."""
    for group in world.groups_in_order():
        check_group(group, world.members_of(group))
    if capacities is not None:
        _check_capacity(world, capacities)


class EventAudit:
    """Follows the event stream; raises on history rules (#1, #2, #7).

    Groups are keyed by their id's integer: it sees every event, and hashing a UUID
    object runs Python code."""

    def __init__(self) -> None:
        self._names: dict[int, str] = {}
        self._attempt: dict[int, int] = {}
        self._released: dict[int, set[int]] = {}
        self._terminal: set[int] = set()
        self._failed_for: dict[int, str] = {}  # member id -> reason of its last failure
        self._group_restarts: dict[int, int] = {}

    def _violation(self, rule: str, gid: int, detail: str) -> InvariantViolation:
        return InvariantViolation(rule, self._names.get(gid, str(UUID(int=gid))), None, detail)

    def observe(self, event: ev.DomainEvent) -> None:
        gid = event.group_id.int
        if gid in self._terminal:
            raise self._violation("#7 terminal groups never change", gid, type(event).__name__)
        handler = _AUDIT.get(type(event))
        if handler is not None:
            handler(self, gid, event)

    def _submitted(self, gid: int, event: ev.GroupSubmitted) -> None:
        self._names[gid] = event.spec.name
        self._attempt[gid] = 1
        self._released[gid] = set()

    def _placement_released(self, gid: int, event: ev.PlacementReleased) -> None:
        self._attempt[gid] += 1

    def _barrier_released(self, gid: int, event: ev.BarrierReleased) -> None:
        if event.attempt != self._attempt[gid]:
            raise self._violation("#2 barrier once per attempt", gid, "wrong attempt")
        if event.attempt in self._released[gid]:
            raise self._violation("#2 barrier once per attempt", gid, "released twice")
        self._released[gid].add(event.attempt)

    def _member_started(self, gid: int, event: ev.MemberStarted) -> None:
        if self._attempt[gid] not in self._released[gid]:
            raise self._violation("#2 barrier once per attempt", gid, "started before barrier")

    def _ended(self, gid: int, event: ev.DomainEvent) -> None:
        self._terminal.add(gid)

    def _member_failed(self, gid: int, event: ev.MemberFailed) -> None:
        self._failed_for[event.originator_id.int] = event.reason

    def _member_restarted(self, gid: int, event: ev.MemberRestarted) -> None:
        reason = self._failed_for.get(event.originator_id.int)
        if event.counted and reason in BUDGET_FREE_REASONS:
            raise self._violation("#6 restart budgets", gid, f"a {reason} restart was counted")

    def _group_restarted(self, gid: int, event: ev.GroupRestarted) -> None:
        before = self._group_restarts.get(gid, 0)
        if event.reason in BUDGET_FREE_REASONS and event.restarts != before:
            raise self._violation(
                "#6 restart budgets", gid, f"a {event.reason} group restart was counted"
            )
        self._group_restarts[gid] = event.restarts


_AUDIT: dict[type[ev.DomainEvent], Callable[[EventAudit, int, Any], None]] = {
    ev.GroupSubmitted: EventAudit._submitted,
    ev.PlacementReleased: EventAudit._placement_released,
    ev.BarrierReleased: EventAudit._barrier_released,
    ev.MemberStarted: EventAudit._member_started,
    ev.TaskStarted: EventAudit._member_started,
    ev.MemberFailed: EventAudit._member_failed,
    ev.MemberRestarted: EventAudit._member_restarted,
    ev.GroupRestarted: EventAudit._group_restarted,
    ev.GroupSucceeded: EventAudit._ended,
    ev.GroupFailed: EventAudit._ended,
    ev.GroupCancelled: EventAudit._ended,
}
"""What each event type means to the audit (the others mean nothing to it)."""
