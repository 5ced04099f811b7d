"""The in-memory allocator's session copy of free capacity is made on the session's
first take or give: what a session takes or gives must never reach the next session's
free capacity, and a take is still checked against what the session took before."""

from __future__ import annotations

import pytest

from costart.domain.invariants import Capacity
from costart.domain.world import World
from costart.placement import Allocator, Cluster, InMemoryAllocator
from costart.placement.allocator import OvercommitError

from .allocator_contract import AllocatorContract
from .builders import a_cluster


def test_a_sessions_takes_and_gives_do_not_reach_the_next_session() -> None:
    allocator, world = InMemoryAllocator(a_cluster(blocks=1, racks=1, nodes=2)), World()
    before = allocator.free_capacity(world)
    allocator.reserve("b0-r0-n0", Capacity(gpu=8))
    allocator.release("b0-r0-n1", Capacity(gpu=1))
    allocator.commit()
    assert allocator.free_capacity(world) == before
    allocator.release("b0-r0-n0", Capacity(cpu=1))  # a give first, then the take
    allocator.reserve("b0-r0-n0", Capacity(gpu=8))
    with pytest.raises(OvercommitError):
        allocator.reserve("b0-r0-n0", Capacity(gpu=1))  # the session's take is seen
    allocator.commit()
    assert allocator.free_capacity(world) == before


def test_moved_nodes_are_every_node_first_then_only_what_changed() -> None:
    cluster = a_cluster(blocks=1, racks=1, nodes=3)
    allocator, world = InMemoryAllocator(cluster), World()
    allocator.free_capacity(world)
    assert allocator.take_moved() == {0, 1, 2}
    allocator.free_capacity(world)
    assert allocator.take_moved() == set()
    cluster.sync_status({"b0-r0-n2": "down"})
    allocator.free_capacity(world)
    cluster.sync_status({"b0-r0-n2": "drained"})
    allocator.free_capacity(world)  # moved since the last take: accumulated
    assert allocator.take_moved() == {2}


class TestInMemoryAllocatorContract(AllocatorContract):
    def create_allocator(self, cluster: Cluster) -> Allocator:
        return InMemoryAllocator(cluster)
