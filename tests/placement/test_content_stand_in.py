"""The plan memo's stand-ins for a view's content are exact.

`PlanMemo` keys plans across sessions by what of the capacity a search reads
(`capacity_read`: every node's fit count, and the vector of each node where one fits).
The carried ledger hands it a cheaper stand-in (`CarriedLedger._content_of`: the
carried start's generation for the shape, and the nodes the session touched), so a key
costs the nodes that changed, not every node. Equal stand-ins must mean equal content:
every time a stand-in is made, the content it stands for is read as well, and a
stand-in seen before must stand for the same content as then.
"""

from __future__ import annotations

from collections.abc import Hashable

import pytest

from costart.cli.sim_cmd import controller_factory
from costart.domain.capacity import Capacity
from costart.domain.spec_types import Shape
from costart.domain.world import World
from costart.placement import InMemoryAllocator
from costart.placement.capacity import CapacityView
from costart.placement.incremental import EventJournal, WorldUsage, carried, plan_memo
from costart.placement.incremental.carried import _VERSIONED, CarriedLedger, StartCache
from costart.placement.ledger import FREE
from costart.sim.results import POLICIES, run_policy
from tests.sim.helpers import setup_of

from .builders import a_cluster
from .workload import run_workload


class StandInCheck:
    """Reads the content behind every stand-in the memo is given; counts stand-ins made,
    those seen before (a memo hit's key), and reads that fell back to the content."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.seen: dict[Hashable, Hashable] = {}
        self.made = self.repeated = self.fell_back = 0
        self.versioned = self.versioned_repeated = 0  # made of a shape version
        stand_in_read = plan_memo.stand_in_read

        def checked(shape: Shape, view: CapacityView, prefer: CapacityView | None) -> Hashable:
            stand_in = stand_in_read(shape, view, prefer)
            if stand_in is None:
                self.fell_back += 1
                return None
            content = plan_memo.capacity_read(shape, view, prefer)
            before = self.seen.setdefault(stand_in, content)
            assert before == content, f"one stand-in for two contents: {stand_in!r}"
            self.made += 1
            self.repeated += before is not content
            if stand_in[1][0] == _VERSIONED:
                self.versioned += 1
                self.versioned_repeated += before is not content
            return stand_in

        monkeypatch.setattr(plan_memo, "stand_in_read", checked)

    def report(self) -> str:
        return (
            f"stand-ins made {self.made}, seen before {self.repeated}, fell back "
            f"{self.fell_back}; of a shape version: made {self.versioned}, seen before "
            f"{self.versioned_repeated}"
        )


@pytest.mark.parametrize("versioned_from", [0, carried.VERSIONED_FROM])
@pytest.mark.parametrize("seed", [3, 11, 2024, 77])
def test_equal_stand_ins_stand_for_equal_content_in_the_busy_workload(
    seed: int, versioned_from: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With shape versions on the workload's small clusters (``versioned_from`` 0) and,
    as configured, without (they are for clusters of `VERSIONED_FROM` nodes on)."""
    monkeypatch.setattr(carried, "VERSIONED_FROM", versioned_from)
    check = StandInCheck(monkeypatch)
    run_workload(seed)
    print(check.report())
    assert check.made > 50
    assert check.repeated > 5
    assert (check.versioned > 5) == (versioned_from == 0)


@pytest.mark.parametrize("policy", POLICIES)
def test_equal_stand_ins_stand_for_equal_content_in_the_simulator(
    policy: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    check = StandInCheck(monkeypatch)
    run_policy(setup_of("mixed", seed=4), policy, controller_factory)
    print(check.report())
    assert check.made > 100
    assert check.repeated > 10


def test_a_vector_that_moves_where_the_count_stays_changes_the_stand_in() -> None:
    """A node's free CPUs drop while its GPUs (what limits the count) stay: the shape's
    fit count there is unchanged, but a search reads that node's vector (what a take
    leaves there), so the stand-in must change. A shape that fits nowhere, before or
    after, reads nothing that moved: its stand-in stays."""
    cluster = a_cluster(blocks=1, racks=1, nodes=4)
    usage = WorldUsage(cluster, EventJournal())
    usage.sync(World())
    allocator, start = InMemoryAllocator(cluster), StartCache()
    one_gpu, too_big = Shape(gpu=1), Shape(gpu=100)

    def stand_ins(free: list[Capacity], moved: set[int] | None) -> tuple[Hashable, Hashable]:
        ledger = CarriedLedger(cluster, allocator, free, usage, start, moved)
        view = ledger._view(FREE, {})
        return view.content_key(one_gpu), view.content_key(too_big)

    full = [node.capacity for node in cluster.nodes]
    first = stand_ins(full, None)
    assert None not in first
    assert stand_ins(list(full), set()) == first  # nothing moved: a memo hit
    node = cluster.nodes[0]
    fewer_cpus = [Capacity(gpu=node.gpu, cpu=node.cpu // 2, mem_gb=node.mem_gb), *full[1:]]
    moved = stand_ins(fewer_cpus, set())  # node 0 found moved by identity
    assert moved[0] != first[0]
    assert moved[1] == first[1]


def test_a_shape_version_moves_with_a_vector_where_the_count_stays(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The same, once the session touched too many nodes for a list of them (the stand-in
    names the shape's version instead): a take that moves a node's CPUs where the GPUs
    limit the count moves the one-GPU shape's version, not the one of a shape that fits
    nowhere; a group's own holds (the overlay) are listed, so two views with different
    holds never share a stand-in."""
    monkeypatch.setattr(carried, "VERSIONED_FROM", 64)
    cluster = a_cluster(blocks=1, racks=1, nodes=64)
    usage = WorldUsage(cluster, EventJournal())
    usage.sync(World())
    one_gpu, too_big = Shape(gpu=1), Shape(gpu=100)
    allocator = InMemoryAllocator(cluster)
    free = allocator.free_capacity(World())
    ledger = CarriedLedger(cluster, allocator, free, usage, StartCache(), None)
    ledger._view(FREE, {}).content_key(one_gpu)  # (the shared counts made, then kept)
    for node in (1, 2, 3):  # three nodes touched: past 1/32 of 64
        ledger.take(node, (1, 1, 1))
    view = ledger._view(FREE, {})
    first = view.content_key(one_gpu), view.content_key(too_big)
    assert first[0][0] == _VERSIONED and first[1][0] == _VERSIONED
    ledger.take(0, (0, 1, 0))  # node 0: CPUs move, its GPUs (and count) stay
    view = ledger._view(FREE, {})
    assert view.content_key(one_gpu) != first[0]
    assert view.content_key(too_big) == first[1]
    held = ledger._view(FREE, {10: (1, 1, 1)}).content_key(one_gpu)  # one node listed
    assert held is not None and held[0] == _VERSIONED
    assert held != view.content_key(one_gpu)
