"""`SessionLedger.take` of several tasks on one node leaves the ledger and the
allocator exactly as taking them one by one: the allocator is asked the same questions
in the same order (a host allocator binds task by task), and the arrays, refreshed
once, equal those refreshed after every task."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from costart.domain.capacity import Capacity
from costart.domain.spec_types import Shape
from costart.domain.world import World
from costart.placement import InMemoryAllocator
from costart.placement.capacity import Vec
from costart.placement.holdings import Usage
from costart.placement.ledger import SessionLedger

from .builders import a_cluster

CLUSTER = a_cluster(blocks=1, racks=2, nodes=3, gpu=8, cpu=32, mem_gb=256)
SHAPES = (Shape(gpu=1, cpu=4), Shape(gpu=2, cpu=8, mem_gb=64), Shape(cpu=2))
NODE = st.integers(0, len(CLUSTER) - 1)
VEC = st.tuples(st.integers(0, 2), st.integers(0, 6), st.integers(0, 48))


class Recorded(InMemoryAllocator):
    """An in-memory allocator that notes every reserve it is asked."""

    def __init__(self) -> None:
        super().__init__(CLUSTER)
        self.asked: list[tuple[str, Capacity]] = []

    def reserve(self, node: str, demand: Capacity) -> None:
        self.asked.append((node, demand))
        super().reserve(node, demand)


def _ledger() -> tuple[SessionLedger, Recorded]:
    allocator, world = Recorded(), World()
    usage = Usage(world, CLUSTER)
    ledger = SessionLedger(
        CLUSTER, allocator, allocator.free_capacity(world), usage.held_total, usage.held_by
    )
    for shape in SHAPES:  # arrays kept current change by change from here on
        ledger.now_view("g").fits(shape)
        ledger.now_view("g", honour_claims=False).fits(shape)
    return ledger, allocator


def _state(ledger: SessionLedger) -> Any:
    views = [ledger.now_view("g"), ledger.now_view("g", honour_claims=False)]
    return (
        list(ledger.free),
        [(view.avail_list(), [view.fits(s) for s in SHAPES]) for view in views],
    )


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(NODE, VEC, st.integers(1, 4)), max_size=8))
def test_taking_tasks_at_once_equals_one_by_one(takes: list[tuple[int, Vec, int]]) -> None:
    batched, batched_asked = _ledger()
    single, single_asked = _ledger()
    for node, vec, count in takes:
        free = batched.free[node]
        if any(f < count * v for f, v in zip(free, vec, strict=True)):
            continue  # the allocator would refuse: not what this compares
        batched.take(node, vec, count)
        for _ in range(count):
            single.take(node, vec)
        assert _state(batched) == _state(single)
    assert batched_asked.asked == single_asked.asked
