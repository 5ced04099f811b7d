"""YuniKorn's gang scheduling with placeholders (ADR 0031).

An application with task groups gets one placeholder pod per member task (``minMember``).
Placeholders are scheduled one by one as capacity frees, like any pod, and hold what
they get; nothing orders them against other applications' placeholders, so two gangs
can each hold part of what both need. When every placeholder is allocated, the real pods
replace them and the application runs. A placeholder not allocated within
``placeholderTimeoutInSeconds`` releases the application's placeholders; under the
default ``gangSchedulingStyle=Soft`` the application then falls back to plain
scheduling (its pods start as they are placed, as under ``independent``).

Modelled on the ``independent`` baseline (each task is a one-task group the placement
step places as soon as it fits): a placed task whose claims are READY is an allocated
placeholder and holds its capacity without starting; when the last one is allocated all
start at once. The timeout is the spec's own placement timeout (the user's analogue of
``placeholderTimeoutInSeconds``, whose default is 15 minutes), counted from the arrival.
At the timeout the allocated tasks start where they are and the rest start as they are
placed (the release of a placeholder and the real pod's bind on the same node are one
step here).
"""

from __future__ import annotations

from costart.domain import events as ev
from costart.sim.embedder import Unit
from costart.sim.independent import IndependentEmbedder
from costart.sim.metrics import Original
from costart.sim.setup import SimSetup


class YuniKornEmbedder(IndependentEmbedder):
    """The embedding controller under YuniKorn's placeholders (Soft style)."""

    def __init__(self, setup: SimSetup) -> None:
        super().__init__(setup)
        self.policy = "yunikorn"
        self.allocated: dict[int, set[str]] = {}  # original index -> allocated task names
        self.soft: set[int] = set()  # originals whose placeholders timed out

    def _on_arrive(self, index: int) -> None:
        super()._on_arrive(index)
        if self.originals[index].outcome is None:  # not rejected
            self.allocated[index] = set()
            timeout = self.arrivals[index].spec.placement.timeout_ns
            self.engine.push(self.arrivals[index].at_ns + timeout, "placeholder_timeout", index)

    def _barrier_released(self, unit: Unit, event: ev.BarrierReleased) -> None:
        """A placeholder is allocated: hold it until the whole gang is."""
        unit.barrier_attempt = event.attempt
        index = unit.original.index
        allocated = self.allocated[index]
        allocated.add(unit.name)
        if index in self.soft:
            self._start_unit(unit)
        elif len(allocated) == len(self.task_units[index]):
            # The real pods replace every placeholder in one step: the tasks start one
            # command after another, which is not a partial start.
            original = unit.original
            partial = original.partial
            for task in self.task_units[index]:
                self._start_unit(task)
            if original.full_started:
                original.partial = partial

    def _released(self, unit: Unit, event: ev.PlacementReleased) -> None:
        self.allocated[unit.original.index].discard(unit.name)

    def _on_placeholder_timeout(self, index: int) -> None:
        original: Original = self.originals[index]
        if original.outcome is not None or original.started_ns is not None:
            return
        if len(self.allocated[index]) == len(self.task_units[index]):
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
