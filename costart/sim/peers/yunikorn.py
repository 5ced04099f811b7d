"""YuniKorn's gang scheduling with placeholders and node reservations (ADRs 0031, 0093).

An application with task groups gets one placeholder pod per member of each task group
(``minMember``). Placeholders are asks like any other and are allocated one by one as
capacity frees; nothing orders them against other applications' placeholders, so two
gangs can each hold part of what both need. An ask that fits no node reserves one
(yunikorn-core ``Application.tryNodes``: once the ask is older than ``reservationDelay``,
2 s, the node with the best fit score is reserved for it; other asks skip a reserved
node, and the reserved ask is allocated there when it fits). When every placeholder is
allocated the real pods replace them and the application runs. The placeholder timer
starts when the application's *first* placeholder is allocated
(``Application.addAllocationInternal`` → ``initPlaceholderTimer``) and fires after
``placeholderTimeoutInSeconds`` (default 900 s): the placeholders are released and, under
the default ``gangSchedulingStyle=Soft``, the application falls back to plain
scheduling (its pods start as they are placed).

Modelled on the ``independent`` baseline: each task is a one-task group the placement
step places, in ``reserve`` mode — a task that does not fit plans a node and claims it,
so later tasks (of every application) go around it, and holds it as it frees: the node
reservation. A placed task whose claims are READY is an allocated placeholder and holds
its capacity without starting; when every gang task (every job task, a replica set's
``min_start``) is allocated, all allocated tasks start at once and later ones start as
they are placed. The timer starts at the first allocation; at 15 minutes the allocated
tasks start where they are and the rest start as they are placed (the release of a
placeholder and the real pod's bind on the same node are one step here).
"""

from __future__ import annotations

from typing import Final

import msgspec

from costart.domain import events as ev
from costart.domain.spec_types import GroupSpec, MemberSpec
from costart.sim.embedder import Unit
from costart.sim.independent import IndependentEmbedder, gang_of, task_spec
from costart.sim.metrics import Original
from costart.sim.setup import SimSetup

SECOND_NS: Final = 10**9
# yunikorn-k8shim's default placeholderTimeoutInSeconds.
PLACEHOLDER_TIMEOUT_NS: Final = 900 * SECOND_NS
# A node reservation lasts until its ask is allocated: no timeout of its own. The
# reserve-mode task's deadline is set past any simulated run so it never lapses.
RESERVATION_NEVER_LAPSES_NS: Final = 365 * 24 * 3600 * SECOND_NS


class YuniKornEmbedder(IndependentEmbedder):
    """The embedding controller under YuniKorn's placeholders (Soft style)."""

    def __init__(self, setup: SimSetup) -> None:
        super().__init__(setup)
        self.policy = "yunikorn"
        self.allocated: dict[int, set[str]] = {}  # original index -> allocated task names
        self.first_allocated: dict[int, int] = {}  # original index -> when (the timer)
        self.soft: set[int] = set()  # originals whose placeholders timed out
        self.running_apps: set[int] = set()  # originals whose gang was allocated whole

    def task_spec(self, spec: GroupSpec, member: MemberSpec, task: int) -> GroupSpec:
        """A task that reserves a node when it does not fit (``Application.tryNodes``).
        It is never ``preemptible`` for another's reservation: a yunikorn-core node
        reservation only keeps other asks off the node, it stops nothing."""
        single = task_spec(spec, member, task)
        placement = msgspec.structs.replace(
            single.placement, mode="reserve", timeout_ns=RESERVATION_NEVER_LAPSES_NS
        )
        members = tuple(msgspec.structs.replace(m, preemptible=False) for m in single.members)
        return msgspec.structs.replace(single, placement=placement, members=members)

    def _on_arrive(self, index: int) -> None:
        super()._on_arrive(index)
        if self.originals[index].outcome is None:  # not rejected
            self.allocated[index] = set()

    def _barrier_released(self, unit: Unit, event: ev.BarrierReleased) -> None:
        """A placeholder is allocated: hold it until every gang task is."""
        unit.barrier_attempt = event.attempt
        index = unit.original.index
        allocated = self.allocated[index]
        allocated.add(unit.name)
        if index not in self.first_allocated:
            now = self.engine.now_ns
            self.first_allocated[index] = now
            self.engine.push(now + PLACEHOLDER_TIMEOUT_NS, "placeholder_timeout", index)
        if index in self.soft or index in self.running_apps:
            self._start_unit(unit)
        elif self._gang_allocated(index):
            # The real pods replace every placeholder in one step: the tasks start one
            # command after another, which is not a partial start.
            self.running_apps.add(index)
            original = unit.original
            partial = original.partial
            for task in self.task_units[index]:
                if task.name in allocated:
                    self._start_unit(task)
            if original.full_started:
                original.partial = partial

    def _gang_allocated(self, index: int) -> bool:
        allocated = self.allocated[index]
        count: dict[str, int] = {}
        for task in self.task_units[index]:
            if task.name in allocated and task.member is not None:
                count[task.member] = count.get(task.member, 0) + 1
        members = self.arrivals[index].spec.members
        return all(count.get(m.name, 0) >= gang_of(m) for m in members)

    def _released(self, unit: Unit, event: ev.PlacementReleased) -> None:
        self.allocated[unit.original.index].discard(unit.name)

    def _on_placeholder_timeout(self, index: int) -> None:
        original: Original = self.originals[index]
        if original.outcome is not None or index in self.running_apps:
            return
        self.soft.add(index)
        for unit in self.task_units[index]:
            if unit.name in self.allocated[index]:
                self._start_unit(unit)

    def _start_unit(self, unit: Unit) -> None:
        if unit.ended or not unit.key:
            return
        for member in unit.spec.members:
            state = self._member(unit, member.name)
            if state.status == "READY":
                self._start_if_allowed(unit, state)
