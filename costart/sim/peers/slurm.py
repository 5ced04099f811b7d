"""Slurm's EASY backfill (ADR 0033).

Jobs wait in priority order (priority, then submission). A job starts when its
resources are free, but once one is left pending no lower job may start in its way: the
first pending job (the head) gets the one reservation, at the *shadow time* — the
earliest moment enough resources free up if every running job ends at its time limit.
A lower job may start now only if it fits now and either ends (by its time limit) before
the shadow time, or uses only what the head will not need then (the *extra*
resources). Nothing is held: the head's nodes run other work until it starts.

Modelled as a gate in front of costart's ``atomic`` placement: a job is submitted to the
controller when the gate starts it, and placed there all at once. The gate counts GPUs
per type in aggregate (`GpuPool`), as Slurm counts a partition's GRES; the nodes are
found by the placement step. A job's time limit is the arrival's declared limit (the
largest run time its workload can draw; unknown for traces and services, which then
never end "before" a reservation). The gate runs whenever a job arrives or ends, as
Slurm's event-triggered scheduling does. Only the head is reserved (``EASY``; Slurm's
backfill plugin can reserve for more, ``bf_max_job_test``).
"""

from __future__ import annotations

from bisect import insort

import msgspec

from costart.domain import events as ev
from costart.sim.embedder import Embedder, Unit
from costart.sim.peers.pool import Demand, GpuPool, demand_of
from costart.sim.setup import SimSetup

NEVER = 1 << 62


class SlurmEasyEmbedder(Embedder):
    """The embedding controller behind Slurm's EASY backfill."""

    def __init__(self, setup: SimSetup) -> None:
        super().__init__(setup, "atomic")
        self.policy = "slurm-easy"
        self.pool = GpuPool.of_cluster(setup.cluster)
        self.queue: list[tuple[int, int, int]] = []  # (-priority, submitted at, index)
        self.running: dict[int, tuple[int, Demand]] = {}  # index -> (ends by, demand)
        self.backfilled = 0

    def _on_arrive(self, index: int) -> None:
        arrival = self._admit(index)
        if arrival is None:
            return
        insort(self.queue, (-arrival.spec.priority, arrival.at_ns, index))
        self.schedule()

    def schedule(self) -> None:
        """One EASY pass over the queue."""
        now = self.engine.now_ns
        shadow: int | None = None
        extra = GpuPool({})
        kept = []
        for entry in self.queue:
            index = entry[2]
            demand = demand_of(self.arrivals[index].spec)
            if shadow is None:
                if self.pool.fits(demand):
                    self._start(index, demand)
                    continue
                shadow, extra = self._reservation(demand)
                kept.append(entry)
                continue
            if not self.pool.fits(demand):
                kept.append(entry)
                continue
            limit = self.arrivals[index].limit_ns
            if limit is not None and now + limit <= shadow:
                self.backfilled += 1
                self._start(index, demand)
            elif extra.fits(demand):
                extra.take(demand)
                self.backfilled += 1
                self._start(index, demand)
            else:
                kept.append(entry)
        self.queue = kept

    def _reservation(self, demand: Demand) -> tuple[int, GpuPool]:
        """The head's shadow time and what it leaves free then: running jobs end at
        their limits, earliest first, until the head fits."""
        future = self.pool.copy()
        ends = sorted((end, index) for index, (end, _) in self.running.items())
        for end, index in ends:
            future.give(self.running[index][1])
            if future.fits(demand):
                future.take(demand)
                return end, future
        return NEVER, GpuPool({})  # no limit known: nothing may use what it would need

    def _start(self, index: int, demand: Demand) -> None:
        arrival = self.arrivals[index]
        limit = arrival.limit_ns
        now = self.engine.now_ns
        self.pool.take(demand)
        self.running[index] = (NEVER if limit is None else now + limit, demand)
        spec = arrival.spec
        placement = msgspec.structs.replace(spec.placement, mode="atomic")
        spec = msgspec.structs.replace(spec, placement=placement)
        self._submit(Unit(spec.name, spec, self.originals[index], None, 0))

    def _group_ended(self, unit: Unit, event: ev.DomainEvent) -> None:
        super()._group_ended(unit, event)
        held = self.running.pop(unit.original.index, None)
        if held is not None:
            self.pool.give(held[1])
            self.schedule()
