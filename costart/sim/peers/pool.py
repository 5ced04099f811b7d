"""The accelerator pool an admission gate (Kueue's quota, Slurm's node count) keeps: GPUs
by type, counted in aggregate, never by node — a gate decides whether a job may go to
the scheduler, the scheduler (costart's placement step here) finds the nodes."""

from __future__ import annotations

from collections.abc import Iterable

from costart.domain.spec_types import GroupSpec
from costart.placement.cluster_file import ClusterDefinition

ANY = ""  # a shape without a gpu_type may use any type

Demand = tuple[tuple[str, int], ...]  # (gpu type or ANY, GPUs), sorted by type


def demand_of(spec: GroupSpec) -> Demand:
    """The GPUs a group asks for: every job task and every replica of a replica set (its
    desired size), as Kueue's quota counts a workload's every pod and Slurm allocates a
    job whole — the same load costart's policies place."""
    need: dict[str, int] = {}
    for member in spec.members:
        gpus = member.shape.gpu * member.count
        if gpus:
            kind = member.shape.gpu_type or ANY
            need[kind] = need.get(kind, 0) + gpus
    return tuple(sorted(need.items()))


class GpuPool:
    """Free GPUs per type, and in total. An untyped demand counts against the total only
    (the gate does not pick the type for it; the placement step does)."""

    def __init__(self, totals: dict[str, int]) -> None:
        self.totals = dict(totals)
        self.total = sum(totals.values())
        self.used: dict[str, int] = {}
        self.used_total = 0

    @classmethod
    def of_cluster(cls, cluster: ClusterDefinition) -> GpuPool:
        totals: dict[str, int] = {}
        for node in cluster.nodes:
            if node.gpu:
                kind = node.gpu_type or ANY
                totals[kind] = totals.get(kind, 0) + node.gpu
        return cls(totals)

    def copy(self) -> GpuPool:
        other = GpuPool(self.totals)
        other.used = dict(self.used)
        other.used_total = self.used_total
        return other

    def fits(self, demand: Demand) -> bool:
        need_total = sum(n for _, n in demand)
        if self.used_total + need_total > self.total:
            return False
        return all(
            self.used.get(kind, 0) + n <= self.totals.get(kind, 0)
            for kind, n in demand
            if kind != ANY
        )

    def take(self, demand: Demand) -> None:
        self._move(demand, 1)

    def give(self, demand: Demand) -> None:
        self._move(demand, -1)

    def _move(self, demand: Iterable[tuple[str, int]], sign: int) -> None:
        for kind, n in demand:
            self.used_total += sign * n
            if kind != ANY:
                self.used[kind] = self.used.get(kind, 0) + sign * n
        if self.used_total < 0 or any(v < 0 for v in self.used.values()):
            raise ValueError("gave back more GPUs than were taken")
