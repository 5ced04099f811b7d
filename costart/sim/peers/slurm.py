"""Slurm's backfill scheduling, per node, from declared time limits (ADRs 0033, 0094).

Jobs wait in priority order (priority, then submission). Slurm's main scheduler starts
them in that order while they fit; the backfill plugin (``sched/backfill``) then walks
the pending jobs in the same order, up to ``bf_max_job_test`` of them (default 500),
over a map of each node's resources in time: a running job holds its nodes until its
start plus its *time limit*. A job that fits now without overlapping an earlier job's
reservation starts; otherwise it gets a reservation on the nodes where it fits
earliest, if that is within ``bf_window`` (default one day), and no lower job may start
in its way. Nothing is held idle: reserved nodes run other work until the job starts.

A job's time limit is what its user declared (``--time``; here the members'
``max_runtime``, the longest of them) or else its partition's ``DefaultTime``; with
neither, the partition's ``MaxTime``, ``UNLIMITED`` by default — which backfill plans as
a year, so a job behind unlimited work is reserved beyond the window, i.e. not at all.
The workload's true run-time distribution is never used: Slurm does not know it.

Modelled as a gate in front of costart's ``atomic`` placement: the gate plans per node
(GPUs by node and type; a task fits a node of its GPU type with enough free GPUs, best
fit), submits a job it starts to the controller, whose placement step places it all at
once; the nodes the gate planned are replaced by the nodes actually placed as soon as
they are. Passes run on every arrival and every end (Slurm's event-triggered scheduling;
``bf_interval`` is not modelled).
"""

from __future__ import annotations

from bisect import insort
from typing import Final

import msgspec

from costart.domain import events as ev
from costart.sim.embedder import Embedder, Unit
from costart.sim.peers.pool import ANY
from costart.sim.setup import SimSetup

HOUR_NS: Final = 3600 * 10**9
# sched/backfill defaults (slurm.conf SchedulerParameters).
BF_MAX_JOB_TEST: Final = 500
BF_WINDOW_NS: Final = 24 * HOUR_NS
# How backfill plans an INFINITE time limit (a year: far beyond any window).
UNLIMITED_NS: Final = 365 * 24 * HOUR_NS

Task = tuple[int, str]  # (GPUs, GPU type or ANY)
NodeUse = dict[str, int]  # node -> GPUs


class Reservation(msgspec.Struct, frozen=True):
    """GPUs on nodes for [start_ns, end_ns)."""

    start_ns: int
    end_ns: int
    nodes: NodeUse


class SlurmEasyEmbedder(Embedder):
    """The embedding controller behind Slurm's backfill (policy ``slurm-easy``)."""

    def __init__(
        self,
        setup: SimSetup,
        default_time_ns: int | None = None,
        max_job_test: int = BF_MAX_JOB_TEST,
    ) -> None:
        super().__init__(setup, "atomic")
        self.policy = "slurm-easy"
        self.default_time_ns = default_time_ns
        self.max_job_test = max_job_test
        self.capacity: dict[str, int] = {}
        self.kind: dict[str, str] = {}
        for node in setup.cluster.nodes:
            if node.gpu:
                self.capacity[node.name] = node.gpu
                self.kind[node.name] = node.gpu_type or ANY
        self.queue: list[tuple[int, int, int]] = []  # (-priority, submitted at, index)
        self.running: dict[int, tuple[int, NodeUse]] = {}  # index -> (ends by, nodes)
        self.backfilled = 0
        self.reservations: list[Reservation] = []  # the last pass's, for tests

    # --- what a job asks for ----------------------------------------------------------

    def limit_ns(self, index: int) -> int:
        """The job's time limit: the longest declared ``max_runtime`` of its members;
        if one declares none, the partition's default; else unlimited."""
        declared = [m.max_runtime_ns for m in self.arrivals[index].spec.members]
        if all(limit is not None for limit in declared):
            return max(limit for limit in declared if limit is not None)
        return self.default_time_ns if self.default_time_ns is not None else UNLIMITED_NS

    def tasks_of(self, index: int) -> list[Task]:
        """Every task's GPUs (a replica set's every replica), largest first."""
        tasks = [
            (m.shape.gpu, m.shape.gpu_type or ANY)
            for m in self.arrivals[index].spec.members
            for _ in range(m.count)
            if m.shape.gpu
        ]
        return sorted(tasks, reverse=True)

    # --- the node map in time ---------------------------------------------------------

    def _profile(self) -> tuple[list[int], list[NodeUse]]:
        """Start times to try (now, then each running job's end, within ``bf_window``)
        and each node's GPUs free then from the running jobs (they end at their limits),
        made once per pass."""
        now = self.engine.now_ns
        free = dict(self.capacity)
        ends: dict[int, list[NodeUse]] = {}
        for ends_by, nodes in self.running.values():
            for node, gpus in nodes.items():
                free[node] -= gpus
            if ends_by <= now + BF_WINDOW_NS:
                ends.setdefault(max(ends_by, now), []).append(nodes)
        times, frees = [now], [dict(free)]
        for at in sorted(ends):
            for nodes in ends[at]:
                for node, gpus in nodes.items():
                    free[node] += gpus
            if at == now:
                frees[0] = dict(free)
            else:
                times.append(at)
                frees.append(dict(free))
        return times, frees

    @staticmethod
    def _minus(free: NodeUse, start: int, end: int, reservations: list[Reservation]) -> NodeUse:
        """``free`` less what reservations overlapping [start, end) hold."""
        left = dict(free)
        for r in reservations:
            if r.start_ns < end and start < r.end_ns:
                for node, gpus in r.nodes.items():
                    left[node] -= gpus
        return left

    def _fit(self, tasks: list[Task], free: NodeUse) -> NodeUse | None:
        """Best fit, task by task (largest first): the node of the task's type with the
        fewest free GPUs that still hold it."""
        left = dict(free)
        use: NodeUse = {}
        for gpus, kind in tasks:
            best = None
            for node, room in left.items():
                fits = room >= gpus and (kind == ANY or self.kind[node] == kind)
                if fits and (best is None or room < left[best]):
                    best = node
            if best is None:
                return None
            left[best] -= gpus
            use[best] = use.get(best, 0) + gpus
        return use

    def _earliest(
        self,
        tasks: list[Task],
        limit: int,
        profile: tuple[list[int], list[NodeUse]],
        reservations: list[Reservation],
    ) -> Reservation | None:
        """Where and when the job fits earliest within ``bf_window``, from now."""
        need = sum(gpus for gpus, _ in tasks)
        for start, base in zip(*profile, strict=True):
            if sum(v for v in base.values() if v > 0) < need:
                continue  # not enough GPUs in aggregate even before reservations
            nodes = self._fit(tasks, self._minus(base, start, start + limit, reservations))
            if nodes is not None:
                return Reservation(start, start + limit, nodes)
        return None

    # --- passes -----------------------------------------------------------------------

    def _on_arrive(self, index: int) -> None:
        arrival = self._admit(index)
        if arrival is None:
            return
        insort(self.queue, (-arrival.spec.priority, arrival.at_ns, index))
        self.schedule()

    def schedule(self) -> None:
        """One pass: every pending job in order starts if it fits now without
        overlapping a higher job's reservation; the first ``bf_max_job_test`` that do
        not get reservations where they fit earliest."""
        now = self.engine.now_ns
        reservations: list[Reservation] = []
        kept = []
        tested = 0
        profile = self._profile()
        for entry in self.queue:
            index = entry[2]
            tasks, limit = self.tasks_of(index), self.limit_ns(index)
            nodes = self._fit(tasks, self._minus(profile[1][0], now, now + limit, reservations))
            if nodes is not None:
                if reservations:
                    self.backfilled += 1
                self._start(index, nodes, now + limit)
                profile = self._profile()
                continue
            kept.append(entry)
            if tested < self.max_job_test:
                tested += 1
                planned = self._earliest(tasks, limit, profile, reservations)
                if planned is not None:
                    reservations.append(planned)
        self.queue = kept
        self.reservations = reservations

    def _start(self, index: int, nodes: NodeUse, ends_by: int) -> None:
        self.running[index] = (ends_by, nodes)
        spec = self.arrivals[index].spec
        placement = msgspec.structs.replace(spec.placement, mode="atomic")
        spec = msgspec.structs.replace(spec, placement=placement)
        self._submit(Unit(spec.name, spec, self.originals[index], None, 0))

    def _placed(self, unit: Unit, event: ev.MemberPlaced) -> None:
        """The nodes the placement step chose replace the ones the gate planned."""
        super()._placed(unit, event)
        index = unit.original.index
        job = self.running.get(index)
        if job is None:
            return
        world = self.engine.controller.world
        actual: NodeUse = {}
        for key in unit.member_keys.values():
            member = world.members[key]
            for a in member.assignments:
                if a.node in self.capacity:
                    actual[a.node] = actual.get(a.node, 0) + member.spec.shape.gpu
        self.running[index] = (job[0], actual)

    def _group_ended(self, unit: Unit, event: ev.DomainEvent) -> None:
        super()._group_ended(unit, event)
        if self.running.pop(unit.original.index, None) is not None:
            self.schedule()
