"""The port to the cluster's allocator, and the in-memory adapter used by tests, serve
and the simulator.

The placement step asks the allocator for free capacity once per session, then tells it
what it takes (`reserve`) or gives back (`release`) while it decides, and `commit`s when
the session's decisions are final. A real controller's allocator binds or pre-empts on
those calls; the in-memory one derives free capacity from the `World` (node capacity
minus every member's holds and placements), so it can never drift from the event log, and
it re-checks every take, so a placement bug surfaces as an error instead of an
overcommitted node.
"""

from __future__ import annotations

from typing import Protocol

from costart.domain.errors import DomainError
from costart.domain.invariants import Capacity
from costart.domain.world import World
from costart.placement.cluster import Cluster

ZERO = Capacity()


class OvercommitError(DomainError):
    """The step tried to take capacity a node does not have free."""


class Allocator(Protocol):
    """Free capacity per node, and the session's reserve / release / commit.

    Contract: `free_capacity` is called first in a session and returns one entry per node
    of `cluster`, in cluster order; nodes that are not ``up`` report zero. `reserve`
    raises `OvercommitError` if the node lacks the capacity; `release` gives back what a
    `reserve` (or a hold or placement in the world) took; `commit` ends the session.
    """

    @property
    def cluster(self) -> Cluster: ...

    def free_capacity(self, world: World) -> list[Capacity]: ...

    def reserve(self, node: str, demand: Capacity) -> None: ...

    def release(self, node: str, demand: Capacity) -> None: ...

    def commit(self) -> None: ...


def used_capacity(world: World, cluster: Cluster) -> list[list[int]]:
    """[gpu, cpu, mem_gb] used per node index: every live member's holds and placements."""
    used = [[0, 0, 0] for _ in cluster.nodes]
    for group in world.live_groups():
        for member in world.members_of(group):
            shape = member.spec.shape
            for assignment in (*member.held, *member.assignments):
                index = cluster.index.get(assignment.node)
                if index is None:
                    continue  # a node removed from the cluster: nothing to account against
                totals = used[index]
                totals[0] += shape.gpu
                totals[1] += shape.cpu
                totals[2] += shape.mem_gb
    return used


class InMemoryAllocator:
    """Free capacity derived from the World; takes checked against it within a session."""

    def __init__(self, cluster: Cluster) -> None:
        self._cluster = cluster
        self._free: list[list[int]] = []

    @property
    def cluster(self) -> Cluster:
        return self._cluster

    def free_capacity(self, world: World) -> list[Capacity]:
        used = used_capacity(world, self._cluster)
        self._free = []
        for i, node in enumerate(self._cluster.nodes):
            if not self._cluster.is_up(i):
                self._free.append([0, 0, 0])
                continue
            gpu, cpu, mem = used[i]
            self._free.append(
                [max(0, node.gpu - gpu), max(0, node.cpu - cpu), max(0, node.mem_gb - mem)]
            )
        return [Capacity(gpu=g, cpu=c, mem_gb=m) for g, c, m in self._free]

    def reserve(self, node: str, demand: Capacity) -> None:
        free = self._free[self._cluster.index[node]]
        if demand.gpu > free[0] or demand.cpu > free[1] or demand.mem_gb > free[2]:
            raise OvercommitError(
                f"node {node}: take gpu {demand.gpu} cpu {demand.cpu} mem {demand.mem_gb}, "
                f"free gpu {free[0]} cpu {free[1]} mem {free[2]}"
            )
        free[0] -= demand.gpu
        free[1] -= demand.cpu
        free[2] -= demand.mem_gb

    def release(self, node: str, demand: Capacity) -> None:
        index = self._cluster.index.get(node)
        if index is None or not self._cluster.is_up(index):
            return  # capacity on a node that is gone or closed is not free for anyone
        free = self._free[index]
        free[0] += demand.gpu
        free[1] += demand.cpu
        free[2] += demand.mem_gb

    def commit(self) -> None:
        self._free = []
