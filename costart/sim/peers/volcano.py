"""Volcano's per-session gang (ADR 0030): the PodGroup is bound only when ``minAvailable``
pods fit in one scheduling session, nothing is held between sessions, and there is no
start barrier on claims: each pod runs as soon as its own volumes are attached.

Placement is costart's ``atomic`` step (the same one-session, all-or-nothing decision,
in the same order: priority, then creation). The claims are taken out of the spec the
controller sees, so every member starts the moment the gang is bound; the pods' own
volume waits are the claim delays drawn exactly as for costart's policies (same keyed
streams), and the job's work begins when the last pod's volumes are ready. Until then
its running GPUs count as partial-start waste, as they are: bound pods whose peers
cannot talk to them yet.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Final

import msgspec

from costart.domain import events as ev
from costart.domain import limits
from costart.domain.actors import Actor
from costart.sim.embedder import Embedder, Unit
from costart.sim.setup import SimSetup, keyed_random

if TYPE_CHECKING:
    from costart.domain.spec_types import GroupSpec


def without_claims(spec: GroupSpec) -> GroupSpec:
    """The spec with no member claims (Volcano gates nothing on them) and placed atomic.
    Nothing is ``preemptible`` for a reservation either: costart's reservations stop
    such work (ADR 0092), Volcano's allocate action and sla plugin do not."""
    members = tuple(msgspec.structs.replace(m, claims=(), preemptible=False) for m in spec.members)
    placement = msgspec.structs.replace(spec.placement, mode="atomic")
    return msgspec.structs.replace(spec, members=members, placement=placement)


class VolcanoEmbedder(Embedder):
    """The embedding controller under Volcano's gang plugin."""

    def __init__(self, setup: SimSetup) -> None:
        super().__init__(setup, "atomic")
        self.policy = "volcano"

    def _on_arrive(self, index: int) -> None:
        self.arrived += 1
        arrival = self.arrivals[index]
        self.usage.waiting += 1
        spec = without_claims(arrival.spec)
        self._submit(Unit(spec.name, spec, self.originals[index], None, 0))

    def volumes_ready_after(self, unit: Unit, member: str, attempt: int) -> int:
        """How long after binding ``member``'s pods have their volumes: the claim delays
        costart's policies draw for the same member and placement (same streams)."""
        arrival = self.arrival_of(unit)
        behaviour = arrival.behaviour_of(member)
        slowest = 0
        for claim in arrival.spec.member(member).claims:
            rng = keyed_random(self.seed, "claim", unit.original.name, member, 0, claim, attempt)
            slowest = max(slowest, behaviour.claim_delay.draw_ns(rng))
        return slowest

    def _barrier_released(self, unit: Unit, event: ev.BarrierReleased) -> None:
        """Bound (no barrier): each member starts when its own volumes are attached."""
        unit.barrier_attempt = event.attempt
        now = self.engine.now_ns
        for member in unit.spec.members:
            after = self.volumes_ready_after(unit, member.name, event.attempt)
            self.engine.push(now + after, "volumes_ready", unit, member.name, event.attempt)

    def _on_volumes_ready(self, unit: Unit, member: str, attempt: int) -> None:
        group = self._group(unit)
        if group.attempt == attempt and not group.is_terminal:
            state = self._member(unit, member)
            if state.status == "READY":
                self._start_if_allowed(unit, state)

    def _member_started(self, unit: Unit, event: ev.MemberStarted) -> None:
        """The gang works once every member runs; a member running before that is a
        partial start (its GPUs wait for its peers), and every member's run time counts
        from that moment. Later starts (restarts) run as under costart."""
        original = unit.original
        if original.full_started:
            super()._member_started(unit, event)
            return
        members = [self._member(unit, m.name) for m in unit.spec.members]
        if not all(m.status == "RUNNING" for m in members):
            original.partial = True
            return
        self.group_started(unit)
        attempt = self._group(unit).attempt
        for state in members:
            start = unit.starts.get(state.name, 0) + 1
            unit.starts[state.name] = start
            after, reason = self.draw_run(original, state.name, start)
            if after is not None:
                token = (state.started_at_ns, attempt)
                self.engine.push(event.at_ns + after, "end_run", unit, state.name, token, reason)


# Volcano's sla plugin has no global default (a nil waiting time: no SLA); the operator
# sets `sla-waiting-time` in the plugin's arguments or per job. The model uses one hour.
SLA_WAITING_NS: Final = 3600 * 10**9


class VolcanoSlaEmbedder(VolcanoEmbedder):
    """Volcano with the ``sla`` plugin (ADR 0095): a job still pending after
    ``sla-waiting-time`` is ordered before every job within its SLA (``JobOrderFn``,
    earliest deadline first) and "locks idle resources pre-allocated to pods of this job
    in allocate action, even if the job has not been Ready yet" (the plugin's design):
    from then on it accumulates capacity as it frees, which costart's ``reserve`` mode
    does. Modelled by resubmitting the overdue job as a ``reserve`` group of the highest
    priority (submission order = deadline order); the arrival's wait counts from its
    first submission."""

    def __init__(self, setup: SimSetup, waiting_ns: int = SLA_WAITING_NS) -> None:
        super().__init__(setup)
        self.policy = "volcano-sla"
        self.waiting_ns = waiting_ns
        self.superseded: set[str] = set()  # units replaced by their overdue copy
        self.overdue = 0

    def _on_arrive(self, index: int) -> None:
        super()._on_arrive(index)
        self.engine.push(self.arrivals[index].at_ns + self.waiting_ns, "sla_due", index)

    def _on_sla_due(self, index: int) -> None:
        original = self.originals[index]
        unit = self.units_by_name.get(self.arrivals[index].spec.name)
        if unit is None or original.outcome is not None or original.started_ns is not None:
            return
        if self._group(unit).status not in ("PENDING", "RESERVING"):
            return  # placed, waiting for volumes: not pending any more
        self.overdue += 1
        self.superseded.add(unit.name)
        self.engine.command(
            self.engine.controller.cancel, unit.name, actor=Actor.user(unit.spec.owner)
        )
        spec = unit.spec
        placement = msgspec.structs.replace(spec.placement, mode="reserve")
        name = "sla-" + hashlib.sha256(spec.name.encode()).hexdigest()[:12]
        spec = msgspec.structs.replace(
            spec, name=name, priority=limits.MAX_PRIORITY, placement=placement
        )
        self._submit(Unit(spec.name, spec, original, None, 0))

    def _group_ended(self, unit: Unit, event: ev.DomainEvent) -> None:
        if unit.name in self.superseded:
            unit.ended = True  # replaced by its overdue copy: the arrival lives on
            return
        super()._group_ended(unit, event)
