"""Kueue with ``waitForPodsReady`` (ADR 0032).

Kueue admits a Workload when its ClusterQueue has quota for all of it, in queue order
(``BestEffortFIFO``, the default: a workload that does not fit does not block the ones
behind it); only then are its pods created, and kube-scheduler places each pod on its
own. With ``waitForPodsReady``, a workload whose pods are not all ready within
``timeout`` (default 5 minutes) is evicted: its pods are deleted, its quota is freed,
and it is requeued after a backoff of ``backoffBaseSeconds`` (60 s) doubling per
eviction up to ``backoffMaxSeconds`` (3600 s), at the back of the queue (the default
``requeuingStrategy.timestamp=Eviction``).

Modelled with one ClusterQueue whose nominal quota is the cluster's GPUs per type
(`GpuPool`, aggregate: quota is not topology). Admitted workloads are split into one
group per task exactly as the ``independent`` baseline does (pods placed one by one and
started when placed and their own claims are READY), so partial starts are possible
until the timeout evicts them. No jitter (the simulator draws nothing it need not),
no ``blockAdmission``, no ``backoffLimitCount`` (requeued without end).
"""

from __future__ import annotations

from bisect import insort

from costart.domain import events as ev
from costart.sim.embedder import Unit
from costart.sim.independent import IndependentEmbedder
from costart.sim.metrics import Original
from costart.sim.peers.pool import Demand, GpuPool, demand_of
from costart.sim.setup import SimSetup

SECOND_NS = 10**9
PODS_READY_TIMEOUT_NS = 300 * SECOND_NS
BACKOFF_BASE_NS = 60 * SECOND_NS
BACKOFF_MAX_NS = 3600 * SECOND_NS


def requeue_backoff_ns(evictions: int) -> int:
    """Kueue's requeue delay after the ``evictions``-th eviction (no jitter)."""
    return min(BACKOFF_BASE_NS << max(evictions - 1, 0), BACKOFF_MAX_NS)


class KueueEmbedder(IndependentEmbedder):
    """The embedding controller behind Kueue's admission."""

    def __init__(self, setup: SimSetup) -> None:
        super().__init__(setup)
        self.policy = "kueue"
        self.pool = GpuPool.of_cluster(setup.cluster)
        # (-priority, queued at, index): BestEffortFIFO order
        self.queue: list[tuple[int, int, int]] = []
        self.admitted: dict[int, Demand] = {}
        self.admissions: dict[int, int] = {}  # index -> how many times admitted
        self.evictions: dict[int, int] = {}
        self.evicting: set[int] = set()

    def _on_arrive(self, index: int) -> None:
        arrival = self._admit(index)
        if arrival is None:
            return
        self._enqueue(index, arrival.at_ns)
        self.admit()

    def _enqueue(self, index: int, at_ns: int) -> None:
        insort(self.queue, (-self.arrivals[index].spec.priority, at_ns, index))

    def admit(self) -> None:
        """Admit every queued workload that fits the free quota, in queue order."""
        kept = []
        for entry in self.queue:
            index = entry[2]
            demand = demand_of(self.arrivals[index].spec)
            if not self.pool.fits(demand):
                kept.append(entry)
                continue
            self.pool.take(demand)
            self.admitted[index] = demand
            round_ = self.admissions.get(index, 0)
            self.admissions[index] = round_ + 1
            now = self.engine.now_ns
            self.split(index, now, round_)
            self.engine.push(now + PODS_READY_TIMEOUT_NS, "pods_ready_timeout", index, round_ + 1)
        self.queue = kept

    def _on_pods_ready_timeout(self, index: int, admission: int) -> None:
        original: Original = self.originals[index]
        if self.admissions.get(index) != admission or original.full_started:
            return
        if original.outcome is not None or index not in self.admitted:
            return
        self.evicting.add(index)
        self._cancel_all(original)
        for unit in self.task_units[index]:
            unit.ended = True  # and a pod not yet created never is
        self.evicting.discard(index)
        original.running_units = 0
        self.pool.give(self.admitted.pop(index))
        evictions = self.evictions.get(index, 0) + 1
        self.evictions[index] = evictions
        now = self.engine.now_ns
        self.engine.push(now + requeue_backoff_ns(evictions), "requeue", index)
        self.admit()

    def _on_requeue(self, index: int) -> None:
        if self.originals[index].outcome is None:
            self._enqueue(index, self.engine.now_ns)
            self.admit()

    def _on_submit(self, unit: Unit) -> None:
        if unit.ended:
            return  # evicted before this pod was created
        super()._on_submit(unit)

    def _member_ended(self, unit: Unit, event: ev.DomainEvent) -> None:
        if unit.original.index not in self.evicting:
            super()._member_ended(unit, event)

    def _finish_if_all_ended(self, original: Original) -> None:
        if original.index in self.evicting:
            return
        super()._finish_if_all_ended(original)
        if original.ended_ns is not None and original.index in self.admitted:
            self.pool.give(self.admitted.pop(original.index))
            self.admit()
