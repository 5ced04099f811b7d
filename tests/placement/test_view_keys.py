"""A view's key promises its content: two views of a session with equal keys offer the
same capacity on every node, so a plan memoised under one is right for the other.

Since ADR 0127 the key carries its own kind's version, moved only when an entry of that
kind's array changes (a placement leaves EVENTUAL alone, a claim leaves FREE alone, a
change that leaves an entry as it was moves nothing): plans are reused across changes
the view does not read. Hypothesis drives a session's ledger through takes, gives,
holds, dropped holds, lent holds and claims, makes every kind of view for a few groups
after each change, and checks that a key seen before comes back only with the content
it had; how often a key came back after a change, and how often a new one was made, is
printed.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from costart.domain.spec_types import Shape
from costart.domain.world import World
from costart.placement import InMemoryAllocator
from costart.placement.capacity import CapacityView, Vec
from costart.placement.holdings import Usage
from costart.placement.ledger import SessionLedger

from .builders import a_cluster

CLUSTER = a_cluster(blocks=1, racks=2, nodes=3, gpu=8, cpu=32, mem_gb=256)
SHAPES = (Shape(gpu=1, cpu=4), Shape(gpu=8), Shape(cpu=2))
GROUPS = ("a", "b")
NODE = st.integers(0, len(CLUSTER) - 1)
VEC = st.tuples(st.integers(0, 4), st.integers(0, 12), st.integers(0, 96))
OPS = ["take", "give", "hold", "drop_holds", "lend", "claim", "claim_none"]
CHANGE = st.tuples(st.sampled_from(OPS), st.sampled_from(GROUPS), NODE, VEC)
WAYS: Counter[str] = Counter()


@pytest.fixture(scope="module", autouse=True)
def _print_ways() -> Any:
    yield
    print(f"\nview keys: {dict(sorted(WAYS.items()))}")
    assert WAYS["key back after a change it does not read"] > 200
    assert WAYS["new key"] > 200


def _content(view: CapacityView) -> tuple[Any, ...]:
    return (tuple(view.avail_list()), tuple(tuple(view.fits(s)) for s in SHAPES))


def _change(ledger: SessionLedger, op: str, group: str, node: int, vec: Vec) -> None:
    if op == "claim":
        ledger.add_claim(node, vec)
    elif op == "claim_none":
        ledger.add_claim(node, (0, 0, 0))  # an entry that does not move
    elif op == "drop_holds":
        for held_node, held in sorted(ledger.drop_holds(group).items()):
            ledger.give(held_node, held)
    elif op == "lend":
        held = ledger.held_by.get(group, {})
        if held:
            first = min(held)
            ledger.drop_hold(group, first, held[first])
    elif op == "give":
        ledger.give(node, vec)
    elif ledger.can_take(node, vec):
        ledger.hold(group, node, vec) if op == "hold" else ledger.take(node, vec)


@settings(max_examples=300, deadline=None)
@given(st.lists(CHANGE, max_size=16))
def test_equal_view_keys_offer_equal_capacity(changes: list[tuple[str, str, int, Vec]]) -> None:
    allocator, world = InMemoryAllocator(CLUSTER), World()
    usage = Usage(world, CLUSTER)
    ledger = SessionLedger(
        CLUSTER, allocator, allocator.free_capacity(world), usage.held_total, usage.held_by
    )
    seen: dict[Hashable, tuple[Any, ...]] = {}
    for step in [None, *changes]:
        if step is not None:
            _change(ledger, *step)
        for group in GROUPS:
            for view in (
                ledger.now_view(group),
                ledger.now_view(group, honour_claims=False),
                ledger.eventual_view(group),
            ):
                content = _content(view)
                if view.key in seen:
                    assert seen[view.key] == content, (view.key, step)
                    if step is not None:
                        WAYS["key back after a change it does not read"] += 1
                else:
                    seen[view.key] = content
                    WAYS["new key"] += 1
