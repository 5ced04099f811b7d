"""The in-memory allocator's session copy of free capacity is made on the session's
first take or give: what a session takes or gives must never reach the next session's
free capacity, and a take is still checked against what the session took before."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import pytest

from costart.domain.capacity import Capacity
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


def test_only_the_nodes_the_usage_reports_moved_are_computed_again() -> None:
    """With a usage source that reports which nodes moved, the others keep their
    reading (the same objects); a status change is found by comparing status."""
    cluster = a_cluster(blocks=1, racks=1, nodes=3)
    source = _Reporting(cluster)
    allocator, world = InMemoryAllocator(cluster, source), World()
    first = allocator.free_capacity(world)  # every node at the first reading
    allocator.commit()
    source.used[1], source.moved = (4, 0, 0), {1}
    second = allocator.free_capacity(world)
    allocator.commit()
    assert second[1] == Capacity(gpu=first[1].gpu - 4, cpu=first[1].cpu, mem_gb=first[1].mem_gb)
    assert second[0] is first[0] and second[2] is first[2]
    cluster.sync_status({"b0-r0-n2": "down"})
    third = allocator.free_capacity(world)
    assert third[2] == Capacity() and third[0] is first[0]


def test_a_first_reading_starts_from_empty_up_nodes_and_computes_what_moved_since() -> None:
    """A usage source's first sync reports the nodes changed since it counted nothing
    (`UsageSource.sync`): the others are read as empty, and nodes not up at the first
    reading report zero whatever the source says."""
    cluster = a_cluster(blocks=1, racks=1, nodes=4)
    source = _Reporting(cluster)
    source.used[1], source.moved = (4, 8, 16), {1}
    cluster.sync_status({"b0-r0-n2": "down", "b0-r0-n3": "drained"})
    allocator = InMemoryAllocator(cluster, source)
    first = allocator.free_capacity(World())
    full = cluster.nodes[0].capacity
    assert first == [full, Capacity(gpu=4, cpu=56, mem_gb=496), Capacity(), Capacity()]


class _Reporting:
    """A `UsageSource` whose numbers and moved nodes a test sets."""

    def __init__(self, cluster: Cluster) -> None:
        self.used: list[tuple[int, int, int]] = [(0, 0, 0)] * len(cluster)
        self.moved: set[int] = set()

    def use_of(self, nodes: Iterable[int]) -> Iterator[tuple[int, int, int]]:
        return map(self.used.__getitem__, nodes)

    def sync(self, world: World) -> set[int] | None:
        moved, self.moved = self.moved, set()
        return moved


class TestInMemoryAllocatorContract(AllocatorContract):
    def create_allocator(self, cluster: Cluster) -> Allocator:
        return InMemoryAllocator(cluster)


def test_a_usage_read_for_another_number_of_nodes_fails_naming_both() -> None:
    """Free capacity is filled by mapping over every node's use: a usage list of another
    length would cut the map short (a silently short reading), so it fails instead."""

    class ShortUsage:
        used = [(0, 0, 0)] * 3

        def use_of(self, nodes: Iterable[int]) -> Iterator[tuple[int, int, int]]:
            return iter(self.used)

        def sync(self, world: World) -> set[int] | None:
            return None

    allocator = InMemoryAllocator(a_cluster(blocks=1, racks=1, nodes=4), ShortUsage())
    with pytest.raises(
        ValueError, match="usage read for 3 nodes, capacity for 4; the cluster has 4"
    ):
        allocator.free_capacity(World())
