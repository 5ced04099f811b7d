"""The simulated embedding controller: what the cluster does around costart.

It submits arrivals, makes claims READY (or FAILED) a drawn delay after a member is
placed, starts members as soon as `may_start` says yes, ends jobs after their run time
(or crashes them, as drawn), and cancels groups of services after their lifetime.

`Embedder` runs the costart policies (``atomic``, ``reserve``: each spec's placement mode
overridden); `costart.sim.independent` subclasses it for the naive baseline. Reactions
work from the events each command wrote, so their cost is O(1) per event, and every
draw comes from a stream keyed by names (`keyed_random`), never from shared state.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import msgspec

from costart.domain import events as ev
from costart.domain.actors import Actor
from costart.domain.errors import DomainError, SpecError
from costart.domain.spec_types import GroupSpec, PlacementMode
from costart.domain.states import GROUP_STARTED, GroupState, MemberState
from costart.sim.errors import SimError
from costart.sim.metrics import Original, count_stop
from costart.sim.ports import SIM_HOST, agent_of, key_of
from costart.sim.setup import HOUR_NS, SimSetup, keyed_random
from costart.sim.workload import Arrival

if TYPE_CHECKING:
    from costart.sim.engine import Engine

EXIT_CODES = {"oom": 137, "error": 1}


class Unit:
    """One controller group as the embedder knows it. Under costart policies the unit is
    the original group; under ``independent`` it is one task of it (``member``/``task``)."""

    __slots__ = (
        "barrier_attempt",
        "ended",
        "gens",
        "key",
        "member",
        "member_keys",
        "name",
        "original",
        "running",
        "spec",
        "starts",
        "task",
    )

    def __init__(
        self, name: str, spec: GroupSpec, original: Original, member: str | None, task: int
    ) -> None:
        self.name = name
        self.spec = spec
        self.original = original
        self.member = member
        self.task = task
        self.key = ""
        self.member_keys: dict[str, str] = {}
        self.gens: dict[str, int] = {}
        self.starts: dict[str, int] = {}
        self.running = False
        self.ended = False
        self.barrier_attempt = 0  # the attempt whose barrier release we reacted to

    def source_member(self, member: str) -> str:
        """The original group's member this unit's member stands for."""
        return self.member if self.member is not None else member


class Embedder:
    """The embedding controller under a costart policy (``mode`` overrides every spec's
    placement mode; None keeps each spec's own)."""

    policy = "costart"

    def __init__(self, setup: SimSetup, mode: PlacementMode | None) -> None:
        self.setup = setup
        self.seed = setup.options.seed
        self.mode = mode
        self.policy = mode or "as-specified"
        self.arrivals = setup.workload.arrivals
        self.originals: list[Original] = []
        self.units_by_name: dict[str, Unit] = {}
        self.units: dict[str, Unit] = {}
        self.rejected: list[str] = []
        self.inputs_refused: list[str] = []  # recorded inputs this run's controller refused
        self.arrived = 0
        self._reactions: dict[type[ev.DomainEvent], Callable[[Unit, Any], None]] = {
            ev.MemberPlaced: self._placed,
            ev.ClaimReady: self._claim_ready,
            ev.BarrierReleased: self._barrier_released,
            ev.MemberStarted: self._member_started,
            ev.PlacementReleased: self._released,
            ev.MemberSucceeded: self._member_ended,
            ev.MemberFailed: self._member_ended,
            ev.MemberStopped: self._member_ended,
            ev.MemberRestarted: self._restarted,
            ev.GroupRestarted: self._restarted,
            ev.GroupSucceeded: self._group_ended,
            ev.GroupFailed: self._group_ended,
            ev.GroupCancelled: self._group_ended,
        }

    def bind(self, engine: Engine) -> None:
        self.engine = engine
        self.usage = engine.usage

    def start(self) -> None:
        for index, arrival in enumerate(self.arrivals):
            self.originals.append(
                Original(index, arrival.spec.name, arrival.at_ns, arrival.workload_name)
            )
            self.engine.push(arrival.at_ns, "arrive", index)
        # What a log recorded besides the arrivals (`costart.replay.whatif`): cancels
        # and scale changes at their times.
        for index, arrival in enumerate(self.arrivals):
            if arrival.cancel_at_ns is not None:
                self.engine.push(arrival.cancel_at_ns, "cancel_at", index)
            for k, change in enumerate(arrival.scales):
                self.engine.push(change.at_ns, "scale", index, k)

    # --- queue items -----------------------------------------------------------------

    def handle(self, kind: str, payload: tuple[Any, ...]) -> None:
        getattr(self, f"_on_{kind}")(*payload)

    def _on_arrive(self, index: int) -> None:
        self.arrived += 1
        arrival = self.arrivals[index]
        original = self.originals[index]
        spec = arrival.spec
        mode = self.mode_for(spec)
        if mode is not None and spec.placement.mode != mode:
            placement = msgspec.structs.replace(spec.placement, mode=mode)
            spec = msgspec.structs.replace(spec, placement=placement)
        self.usage.waiting += 1
        self._submit(Unit(spec.name, spec, original, None, 0), arrival.submitter)

    def mode_for(self, spec: GroupSpec) -> PlacementMode | None:
        """The mode this policy submits ``spec`` in (None: the spec's own)."""
        return self.mode

    def _admit(self, index: int) -> Arrival | None:
        """For the policies that place by themselves: count the arrival as waiting, and
        None (rejected, saying why) when it can never fit the cluster — the same admission
        check as costart's, so every policy runs the same groups."""
        self.arrived += 1
        arrival = self.arrivals[index]
        self.usage.waiting += 1
        try:
            self.engine.placement.check_feasible(arrival.spec)
        except SpecError as error:
            self._reject(self.originals[index], str(error))
            return None
        return arrival

    def _submit(self, unit: Unit, actor: Actor | None = None) -> None:
        self.units_by_name[unit.name] = unit
        try:
            self.engine.submit(unit.spec, actor)
        except SpecError as error:
            self._reject(unit.original, str(error))

    def _reject(self, original: Original, why: str) -> None:
        if original.outcome is None:
            original.outcome = "rejected"
            original.ended_ns = self.engine.now_ns
            self.usage.waiting -= 1
            self.rejected.append(f"{original.name}: {why}")

    def _on_claim(self, unit: Unit, member: str, claim: str, attempt: int, fail: bool) -> None:
        """The claim driver reports, naming the placement attempt it readied the claim
        for: costart itself tells a late report (placed again, released) from a
        current one, and writes nothing for it."""
        ref = f"{unit.name}/{member}"
        controller = self.engine.controller
        if fail:
            self.engine.report(
                controller.claim_failed, ref, claim, attempt, "simulated", actor=SIM_HOST
            )
        else:
            self.engine.report(controller.claim_ready, ref, claim, attempt, actor=SIM_HOST)

    def _on_end_run(self, unit: Unit, member: str, token: tuple[int, int], reason: str) -> None:
        """A started member's run ends: ``reason`` "" is success (every task of the job
        exits 0), else a crash of its first task (a replica set: its lowest replica)."""
        state = self._member(unit, member)
        group = self._group(unit)
        if state.status != "RUNNING" or (state.started_at_ns, group.attempt) != token:
            return  # restarted, stopped or released since
        ref = f"{unit.name}/{member}"
        controller = self.engine.controller
        running = [t for t in state.tasks if t.status == "RUNNING"]
        if not reason:
            for task in running:
                self.engine.report(
                    controller.task_succeeded,
                    ref,
                    task.index,
                    task.attempt,
                    actor=agent_of(task.node),
                )
            return
        if state.spec.kind == "replica-set":
            index = min(a.index for a in state.assignments)
            exit_code = None
        else:
            index = min(t.index for t in running)
            exit_code = EXIT_CODES.get(reason, 1)
        failed = state.task(index)
        if failed is None:
            raise SimError(f"{ref}: placed task {index} has no task state")
        self.engine.report(
            controller.task_failed,
            ref,
            index,
            failed.attempt,
            reason,
            exit_code=exit_code,
            actor=agent_of(failed.node),
        )

    def _on_cancel(self, unit: Unit, actor: Actor | None = None) -> None:
        if not self._group(unit).is_terminal:
            self.engine.command(
                self.engine.controller.cancel,
                unit.name,
                actor=actor or Actor.user(unit.spec.owner),
            )

    def _units_of(self, index: int) -> list[Unit]:
        """The live units an original group runs as, in the order they were made."""
        return [u for u in self.units.values() if u.original.index == index and u.key]

    def _on_cancel_at(self, index: int) -> None:
        """A recorded cancel: every unit of the group that is still live."""
        for unit in self._units_of(index):
            self._on_cancel(unit, self.arrivals[index].cancelled_by)

    def _on_scale(self, index: int, k: int) -> None:
        """A recorded scale change of a member, where the group still runs it (a
        policy that splits the group into units scales the unit holding the member)."""
        change = self.arrivals[index].scales[k]
        for unit in self._units_of(index):
            group = self._group(unit)
            if group.is_terminal or change.member not in unit.member_keys:
                continue
            ref = f"{unit.name}/{change.member}"
            try:
                self.engine.command(
                    self.engine.controller.scale, ref, change.replicas, actor=change.actor
                )
            except DomainError as error:  # allowed when recorded, not in this run
                self.inputs_refused.append(f"{ref} scaled to {change.replicas}: {error}")

    # --- reacting to written events ---------------------------------------------------

    def submitted(self, event: ev.GroupSubmitted) -> None:
        """Learn the new group's id and its members' ids (the keys of later events)."""
        unit = self.units_by_name[event.spec.name]
        unit.key = str(event.originator_id)
        unit.member_keys = {
            m.name: str(i) for m, i in zip(event.spec.members, event.member_ids, strict=True)
        }
        self.units[unit.key] = unit

    def member_changed(self, group_key: str, member_key: str, member: MemberState) -> None:
        self.usage.member_changed(member_key, member, self.units[group_key].original)

    def react(self, events: list[ev.DomainEvent]) -> None:
        """Act on what one command wrote (after all of it is accounted)."""
        units = self.units
        for event in events:
            reaction = self._reactions.get(type(event))
            if reaction is not None:
                reaction(units[key_of(event.group_id)], event)

    def _member(self, unit: Unit, member: str) -> MemberState:
        return self.engine.controller.world.members[unit.member_keys[member]]

    def _group(self, unit: Unit) -> GroupState:
        return self.engine.controller.world.groups[unit.key]

    def _member_name(self, event: ev.DomainEvent) -> MemberState:
        return self.engine.controller.world.members[key_of(event.originator_id)]

    def _placed(self, unit: Unit, event: ev.MemberPlaced) -> None:
        state = self._member_name(event)
        if state.status == "PLACED":
            self._schedule_claims(unit, state)
        elif state.status in ("READY", "RUNNING"):
            # READY: a restarted member; RUNNING: replicas placed alone, which their
            # agents start at once.
            self._start_after_barrier(unit, state)

    def _claim_ready(self, unit: Unit, event: ev.ClaimReady) -> None:
        state = self._member_name(event)
        if state.status == "READY":
            self._start_after_barrier(unit, state)

    def _start_after_barrier(self, unit: Unit, state: MemberState) -> None:
        """A member READY after its group started (a restart): start it. Before the
        barrier release is handled, `_barrier_released` starts the whole gang."""
        if unit.barrier_attempt == self._group(unit).attempt:
            self._start_if_allowed(unit, state)

    def _barrier_released(self, unit: Unit, event: ev.BarrierReleased) -> None:
        unit.barrier_attempt = event.attempt
        self.group_started(unit)
        for member in unit.spec.members:
            state = self._member(unit, member.name)
            if state.status == "READY":
                self._start_if_allowed(unit, state)

    def _start_if_allowed(self, unit: Unit, state: MemberState) -> None:
        """Each agent starts the member's placed tasks of its current attempt."""
        ref = f"{unit.name}/{state.name}"
        controller = self.engine.controller
        if self._group(unit).status in GROUP_STARTED and controller.may_start(ref):
            attempt = state.attempt
            for task in [t for t in state.tasks if t.status == "PLACED" and t.attempt == attempt]:
                self.engine.report(
                    controller.task_started, ref, task.index, attempt, actor=agent_of(task.node)
                )

    def _schedule_claims(self, unit: Unit, state: MemberState) -> None:
        gen = unit.gens.get(state.name, 0) + 1
        unit.gens[state.name] = gen
        source = unit.source_member(state.name)
        behaviour = self.arrival_of(unit).behaviour_of(source)
        now = self.engine.now_ns
        arrival = self.arrival_of(unit)
        for claim in state.spec.claims:
            recorded = arrival.claim_outcome(source, gen, claim)
            if recorded is not None:
                if recorded.delay_ns is not None:  # None: never reported for this placement
                    self.engine.push(
                        now + recorded.delay_ns,
                        "claim",
                        unit,
                        state.name,
                        claim,
                        state.attempt,
                        recorded.failed,
                    )
                continue
            rng = keyed_random(
                self.seed, "claim", unit.original.name, source, unit.task, claim, gen
            )
            delay = behaviour.claim_delay.draw_ns(rng)
            fail = behaviour.claim_fail > 0 and rng.random() < behaviour.claim_fail
            self.engine.push(now + delay, "claim", unit, state.name, claim, state.attempt, fail)

    def arrival_of(self, unit: Unit) -> Arrival:
        return self.arrivals[unit.original.index]

    def draw_run(self, original: Original, member: str, start: int) -> tuple[int | None, str]:
        """When the ``start``-th start of ``member`` ends, and why ("" = success):
        (None, "") for a service that runs until its group ends."""
        arrival = self.arrivals[original.index]
        run = arrival.run_of(member)
        behaviour = arrival.behaviour_of(member)
        job = arrival.spec.member(member).kind == "job"
        recorded = arrival.run_outcome(member, start)
        if recorded is not None:
            return recorded.after_ns, recorded.reason
        runtime = (run.runtime_ns or HOUR_NS) if job else None
        if run.fails_after_ns is not None and start == 1:
            return run.fails_after_ns, run.failure_reason
        if not behaviour.fail:
            return runtime, ""  # nothing to draw (seeding a stream costs more than a draw)
        rng = keyed_random(self.seed, "run", original.name, member, start)
        if rng.random() < behaviour.fail:
            reason = rng.choice(behaviour.fail_reasons)
            if runtime is not None:
                return int(rng.random() * runtime), reason
            if behaviour.crash_after is not None:
                return behaviour.crash_after.draw_ns(rng), reason
        return runtime, ""

    # --- policy hooks ------------------------------------------------------------------

    def _member_started(self, unit: Unit, event: ev.MemberStarted) -> None:
        state = self._member_name(event)
        original = unit.original
        self.usage.member_started(original)
        start = unit.starts.get(state.name, 0) + 1
        unit.starts[state.name] = start
        after, reason = self.draw_run(original, state.name, start)
        if after is not None:
            token = (event.at_ns, self._group(unit).attempt)
            self.engine.push(event.at_ns + after, "end_run", unit, state.name, token, reason)

    def _member_ended(self, unit: Unit, event: ev.DomainEvent) -> None:
        """A member succeeded, failed or was stopped: count what stopped it early."""
        if isinstance(event, ev.MemberFailed):
            count_stop(unit.original, event.reason)

    def _restarted(self, unit: Unit, event: ev.MemberRestarted | ev.GroupRestarted) -> None:
        self.usage.restarted(unit.original, whole_group=isinstance(event, ev.GroupRestarted))

    def group_started(self, unit: Unit) -> None:
        original = unit.original
        if not self.usage.group_started(original, self.engine.now_ns):
            return
        lifetime = self.arrival_of(unit).lifetime_ns
        if lifetime is not None and all(m.kind == "replica-set" for m in unit.spec.members):
            self.engine.push(self.engine.now_ns + lifetime, "cancel", unit)

    def _released(self, unit: Unit, event: ev.PlacementReleased) -> None:
        self.usage.set_full_started(unit.original, False)

    def _group_ended(self, unit: Unit, event: ev.DomainEvent) -> None:
        unit.ended = True
        outcome = type(event).__name__.removeprefix("Group").lower()
        self.usage.group_ended(unit.original, outcome, self.engine.now_ns)
