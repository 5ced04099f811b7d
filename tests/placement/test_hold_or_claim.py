"""`SessionLedger.hold_or_claim` adds a reservation's claims after its holds, one per
node; it must leave the ledger (and the holds it returns) exactly as holding or
claiming task by task does."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from costart.domain.spec_types import Shape
from costart.domain.world import World
from costart.placement import InMemoryAllocator
from costart.placement.capacity import Vec, shape_vec
from costart.placement.holdings import Usage
from costart.placement.ledger import SessionLedger

from .builders import a_cluster

CLUSTER = a_cluster(blocks=1, racks=2, nodes=3, gpu=8, cpu=32, mem_gb=256)
SHAPES = (Shape(gpu=1, cpu=4), Shape(gpu=2, cpu=8, mem_gb=64), Shape(cpu=2))
NODE = st.integers(0, len(CLUSTER) - 1)
VEC = st.tuples(st.integers(0, 4), st.integers(0, 12), st.integers(0, 96))
# Before the reservation: takes of free capacity, other groups' holds, higher claims.
CHANGE = st.tuples(st.sampled_from(["take", "hold", "claim"]), NODE, VEC)


def _ledger(changes: list[tuple[str, int, Vec]]) -> SessionLedger:
    allocator, world = InMemoryAllocator(CLUSTER), World()
    usage = Usage(world, CLUSTER)
    ledger = SessionLedger(
        CLUSTER, allocator, allocator.free_capacity(world), usage.held_total, usage.held_by
    )
    for shape in SHAPES:  # arrays kept current change by change from here on
        ledger.now_view("g").fits(shape)
        ledger.eventual_view("g").fits(shape)
    for op, node, vec in changes:
        if op == "claim":
            ledger.add_claim(node, vec)
        elif ledger.can_take(node, vec):
            ledger.hold("other", node, vec) if op == "hold" else ledger.take(node, vec)
    return ledger


@settings(max_examples=300, deadline=None)
@given(
    st.lists(CHANGE, max_size=12),
    st.lists(NODE, max_size=16),
    st.sampled_from([*SHAPES, Shape(gpu=3, cpu=10, mem_gb=80)]),
)
def test_holding_and_claiming_at_once_equals_task_by_task(
    changes: list[tuple[str, int, Vec]], nodes: list[int], shape: Shape
) -> None:
    vec = shape_vec(shape)
    batched, stepwise = _ledger(changes), _ledger(changes)

    got = batched.hold_or_claim("g", nodes, vec)

    fresh, claimed = [], 0
    for node in nodes:
        if stepwise.can_take(node, vec):
            stepwise.hold("g", node, vec)
            fresh.append(node)
        else:
            stepwise.add_claim(node, vec)
            claimed += 1
    assert got == (fresh, claimed)
    assert batched.free == stepwise.free
    assert batched.claim == stepwise.claim
    assert batched.held_total == stepwise.held_total
    assert batched.held_by == stepwise.held_by
    for group in ("g", "other", None):
        for honour in (True, False):
            a = batched.now_view(group, honour_claims=honour)
            b = stepwise.now_view(group, honour_claims=honour)
            assert a.avail_list() == b.avail_list()
            assert [a.fits(s) for s in SHAPES] == [b.fits(s) for s in SHAPES]
    a, b = batched.eventual_view("g"), stepwise.eventual_view("g")
    assert a.avail_list() == b.avail_list()
    assert [a.fits(s) for s in SHAPES] == [b.fits(s) for s in SHAPES]
