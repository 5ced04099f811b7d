"""The ``independent`` baseline: every task placed and started as soon as it fits.

This is what users have without co-start: each task of a group is its own one-task
group (atomic, with its member's claims, so it starts once it is placed and its own
claims are READY), submitted when its pod would be created (up to ``task_skew`` after
the group's arrival, drawn per task). The original group counts as started when every
task runs at once; its jobs' run time counts from that moment — tasks that started
earlier hold accelerators doing nothing (partial-start waste). The naive controller has
no group failure policy: a task that fails fails its original group, whose other tasks
are cancelled. A replica set contributes every replica it asks for (``count``, as costart
places up to the desired size), and the original counts as started once every job task
and each replica set's start quorum (``min_start``) run at once — the same gang costart
waits for, so every policy is offered the same load.

An original group that never fully starts while some of its tasks hold accelerators
when the run ends is deadlocked.
"""

from __future__ import annotations

import hashlib
from typing import Any

import msgspec

from costart.domain import events as ev
from costart.domain.actors import Actor
from costart.domain.spec_types import FailurePolicy, GroupSpec, MemberSpec, SuccessPolicy
from costart.sim.embedder import Embedder, Unit
from costart.sim.metrics import Original
from costart.sim.ports import agent_of
from costart.sim.setup import SimSetup, keyed_random

GENERATIONS_PER_ROUND = 1000
FAIL_GROUP = FailurePolicy(default="fail-group", max_group_restarts=0)
ALL_JOBS = SuccessPolicy(when="all-jobs")


def task_name(original: str, member: str, task: int) -> str:
    """A short, deterministic, valid group name for one task of an original group."""
    digest = hashlib.sha256(f"{original}/{member}/{task}".encode()).hexdigest()[:12]
    return f"t-{digest}"


def task_spec(spec: GroupSpec, member: MemberSpec, task: int) -> GroupSpec:
    """One task of ``member`` as a group of its own (atomic, fail-group)."""
    single = msgspec.structs.replace(member, count=1, min_start=1, min_running=1)
    placement = msgspec.structs.replace(
        spec.placement, mode="atomic", topology=None, placement_group=None
    )
    return msgspec.structs.replace(
        spec,
        name=task_name(spec.name, member.name, task),
        placement=placement,
        failure=FAIL_GROUP,
        success=ALL_JOBS,
        members=(single,),
    )


def tasks_of(member: MemberSpec) -> int:
    """Tasks created for a member: every job task, every replica (the desired size)."""
    return member.count


def gang_of(member: MemberSpec) -> int:
    """Tasks of a member that must run for the original to count as started."""
    return member.count if member.kind == "job" else member.min_start


class IndependentEmbedder(Embedder):
    """The embedding controller without co-start groups."""

    def __init__(self, setup: SimSetup) -> None:
        super().__init__(setup, None)
        self.policy = "independent"
        self.task_units: dict[int, list[Unit]] = {}
        # Per original: its members' tasks running now (a member absent: none).
        self.running_tasks: dict[int, dict[str, int]] = {}

    def _on_arrive(self, index: int) -> None:
        arrival = self._admit(index)
        if arrival is None:
            return
        self.split(index, arrival.at_ns)

    def split(self, index: int, at_ns: int, attempt: int = 0) -> None:
        """Create the original's task groups, each submitted up to ``task_skew`` after
        ``at_ns`` (``attempt`` > 0: a later round of them, under new names)."""
        arrival = self.arrivals[index]
        original = self.originals[index]
        units = []
        skew = self.setup.options.task_skew_ns
        source = (
            arrival.spec
            if not attempt
            else msgspec.structs.replace(arrival.spec, name=f"{arrival.spec.name}/{attempt}")
        )
        for member in arrival.spec.members:
            for task in range(tasks_of(member)):
                spec = self.task_spec(source, member, task)
                unit = Unit(spec.name, spec, original, member.name, task)
                # A later round draws fresh claim delays (its own placements' streams).
                unit.gens[member.name] = attempt * GENERATIONS_PER_ROUND
                units.append(unit)
                rng = keyed_random(self.seed, "skew", original.name, member.name, task)
                self.engine.push(at_ns + int(rng.random() * skew), "submit", unit)
        original.units = len(units)
        self.task_units[index] = units
        self.running_tasks[index] = {}

    def task_spec(self, spec: GroupSpec, member: MemberSpec, task: int) -> GroupSpec:
        """The group one task runs as (a peer model may place it differently)."""
        return task_spec(spec, member, task)

    def _on_submit(self, unit: Unit) -> None:
        if unit.original.outcome is None:
            self._submit(unit)
        else:
            unit.ended = True  # the original ended (failed) before this task was created
            self._finish_if_all_ended(unit.original)

    def _member_started(self, unit: Unit, event: ev.MemberStarted) -> None:
        original = unit.original
        unit.running = True
        original.running_units += 1
        source = unit.source_member(unit.spec.members[0].name)
        running = self.running_tasks[original.index]
        running[source] = running.get(source, 0) + 1
        if original.full_started:
            return
        if not self._gang_running(original):
            original.partial = True
            return
        self.usage.set_full_started(original, True)
        original.started_ns = self.engine.now_ns
        self.usage.waiting -= 1
        arrival = self.arrivals[original.index]
        for member in arrival.spec.members:
            after, reason = self.draw_run(original, member.name, 1)
            if after is not None:
                self.engine.push(
                    self.engine.now_ns + after, "end_member", original, member.name, reason
                )
        if arrival.lifetime_ns is not None and all(
            m.kind == "replica-set" for m in arrival.spec.members
        ):
            self.engine.push(self.engine.now_ns + arrival.lifetime_ns, "end_original", original)

    def _gang_running(self, original: Original) -> bool:
        running = self.running_tasks[original.index]
        return all(
            running.get(m.name, 0) >= gang_of(m) for m in self.arrivals[original.index].spec.members
        )

    def _member_ended(self, unit: Unit, event: ev.DomainEvent) -> None:
        super()._member_ended(unit, event)
        if unit.running:
            unit.running = False
            unit.original.running_units -= 1
            running = self.running_tasks[unit.original.index]
            running[unit.source_member("")] -= 1

    def group_started(self, unit: Unit) -> None:
        """A task's own barrier: the original starts only when every task runs."""

    def _released(self, unit: Unit, event: ev.PlacementReleased) -> None:
        """A task released before its start simply waits again; nothing to move."""

    def _group_ended(self, unit: Unit, event: ev.DomainEvent) -> None:
        unit.ended = True
        original = unit.original
        units = self.task_units[original.index]
        if original.outcome is None:
            if isinstance(event, ev.GroupFailed):
                original.outcome = "failed"
                self.usage.attempt_lost(original)
                self._cancel_all(original)
            elif isinstance(event, ev.GroupSucceeded):
                jobs = [u for u in units if u.spec.members[0].kind == "job"]
                if all(u.ended for u in jobs):
                    original.outcome = "succeeded"
                    self.usage.attempt_kept(original)
                    self._cancel_all(original)
        self._finish_if_all_ended(original)

    def _finish_if_all_ended(self, original: Original) -> None:
        if original.ended_ns is None and all(u.ended for u in self.task_units[original.index]):
            original.outcome = original.outcome or "cancelled"
            original.ended_ns = self.engine.now_ns
            if original.started_ns is None:
                self.usage.waiting -= 1

    def _cancel_all(self, original: Original) -> None:
        for unit in self.task_units[original.index]:
            if unit.key and not unit.ended and not self._group(unit).is_terminal:
                self.engine.command(
                    self.engine.controller.cancel, unit.name, actor=Actor.user(unit.spec.owner)
                )

    def _on_end_member(self, original: Original, member: str, reason: str) -> None:
        """The original's job member finishes (every task succeeds) or one task crashes."""
        if original.outcome is not None:
            return
        controller = self.engine.controller
        for unit in self.task_units[original.index]:
            if unit.member != member or unit.ended or not unit.running:
                continue
            ref = f"{unit.name}/{member}"
            task = self._member(unit, member).tasks[0]  # the one task of the unit's group
            actor = agent_of(task.node)
            if not reason:
                self.engine.report(controller.task_succeeded, ref, 0, task.attempt, actor=actor)
            else:
                self.engine.report(
                    controller.task_failed, ref, 0, task.attempt, reason, exit_code=1, actor=actor
                )
                return

    def _on_end_original(self, original: Original, *_: Any) -> None:
        if original.outcome is None:
            original.outcome = "cancelled"
            self._cancel_all(original)
