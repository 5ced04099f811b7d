"""Fit counts and classes kept as byte arrays (ADR 0159): where a count or a class number
could pass a byte, the kept arrays become lists and stay exact; and `by_class`, which
makes a cold start's per-node lists from the classes, against its plain comprehension."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from costart.domain.capacity import Capacity
from costart.domain.spec_types import Shape
from costart.domain.world import World
from costart.placement import Cluster, InMemoryAllocator
from costart.placement.allocator import FreeClasses
from costart.placement.capacity import CapacityView, fit_counts
from costart.placement.incremental import EventJournal, WorldUsage
from costart.placement.incremental.by_class import by_class, by_class_plain
from costart.placement.incremental.carried import CarriedLedger, StartCache
from costart.placement.incremental.domain_sums import _summed
from costart.placement.incremental.used import UsedCount
from costart.placement.ledger import ViewKind

from .builders import a_cluster
from .test_session_ledger_current import StartCheck
from .workload import digests, run_workload

_KINDS: Counter[str] = Counter()


def test_a_class_past_a_byte_on_a_moved_node_turns_the_carried_classes_into_a_list() -> None:
    cluster = a_cluster(blocks=1, racks=1, nodes=3)
    usage = WorldUsage(cluster, EventJournal())
    allocator, start, world = InMemoryAllocator(cluster), StartCache(), World()

    def session() -> None:
        cluster.sync_status(world.node_status)
        free = allocator.free_capacity(world)
        ledger = CarriedLedger(cluster, allocator, free, usage, start, usage.sync(world))
        for kind in ViewKind:
            ledger._view(kind, {}).fits(Shape(gpu=1))
        StartCheck.check(ledger, world)
        allocator.commit()

    session()
    assert isinstance(start.classes, bytearray)
    # 300 classes met since (other sessions' free vectors): the next one is number 301.
    for k in range(300):
        start.class_of[Capacity(gpu=9, cpu=k, mem_gb=1)]
    world.node_status["b0-r0-n1"] = "down"  # its free capacity: zero, a new class
    session()
    assert isinstance(start.classes, list)
    assert start.classes[1] >= 256


def test_an_overlay_count_past_a_byte_makes_the_views_counts_a_list() -> None:
    cluster = a_cluster(blocks=1, racks=1, nodes=2, cpu=1000, gpu_type=None)
    shape = Shape(cpu=1)
    shared = {shape: bytearray([3, 5])}
    view = CapacityView(cluster, [(0, 3, 0), (0, 5, 0)], {1: (0, 400, 0)}, shared)
    fits = view.fits(shape)
    assert isinstance(fits, list) and fits == [3, 405]
    assert shared[shape] == bytearray([3, 5])  # the shared counts are left alone
    small = CapacityView(cluster, [(0, 3, 0), (0, 5, 0)], {1: (0, 4, 0)}, shared)
    assert small.fits(shape) == bytearray([3, 9])
    assert list(small.fits(shape)) == fit_counts(cluster, small.avail_list(), shape)


@settings(max_examples=200, deadline=None)
@given(
    st.integers(1, 300),
    st.lists(st.integers(0, 299), max_size=200),
)
def test_by_class_equals_the_plain_comprehension(count: int, picks: list[int]) -> None:
    objects = [(k, k * 2, k * 3) for k in range(count)]  # tuples: not read as rows
    classes_list = [p % count for p in picks]
    for classes in (classes_list, bytearray(k for k in classes_list if k < 256)):
        _KINDS[type(classes).__name__] += 1
        made = by_class(objects, classes)
        assert made == by_class_plain(objects, classes)
        assert all(a is objects[k] for a, k in zip(made, classes, strict=True))


def test_a_class_outside_the_objects_is_an_error() -> None:
    with pytest.raises(IndexError):
        by_class([(1, 1, 1)], bytearray([0, 1]))


def teardown_module() -> None:
    print(f"\nby_class readings taken: {dict(_KINDS)}")


class ClassedAllocator(InMemoryAllocator):
    """An in-memory allocator that offers its free capacity by class (`free_classes`):
    the classes numbered by each distinct object's first node, at most ``few`` of them
    as bytes. Counts the offers a ledger took."""

    def __init__(self, cluster: Cluster, few: int = 256) -> None:
        super().__init__(cluster, UsedCount(cluster))
        self._last: list[Capacity] | None = None
        self.few = few
        self.offers = 0

    def free_capacity(self, world: World) -> list[Capacity]:
        self._last = super().free_capacity(world)
        return self._last

    def free_classes(self, free: Sequence[Capacity]) -> FreeClasses | None:
        if free is not self._last:
            return None
        capacities: list[Capacity] = []
        number: dict[int, int] = {}
        classes = []
        for capacity in free:
            k = number.setdefault(id(capacity), len(capacities))
            if k == len(capacities):
                capacities.append(capacity)
            classes.append(k)
        self.offers += 1
        fit = len(capacities) <= self.few
        return FreeClasses(bytes(classes) if fit else classes, capacities)


@pytest.mark.parametrize("few", [256, 0])
def test_a_start_from_the_allocators_classes_equals_one_from_scratch(
    few: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    made: list[ClassedAllocator] = []

    def allocator(cluster: Cluster) -> ClassedAllocator:
        made.append(ClassedAllocator(cluster, few))
        return made[-1]

    starts = StartCheck(monkeypatch)
    sessions = run_workload(3, allocator=allocator)
    assert starts.started > 10
    assert sum(a.offers for a in made) >= 1
    monkeypatch.undo()
    assert digests(sessions) == digests(run_workload(3))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(1, 6), min_size=1, max_size=12), st.data())
def test_counts_in_bytes_are_summed_per_run_as_a_list_is(
    sizes: list[int], data: st.DataObject
) -> None:
    counts = data.draw(st.lists(st.integers(0, 255), min_size=sum(sizes), max_size=sum(sizes)))
    runs, start = [], 0
    for k, size in enumerate(sizes):
        runs.append((f"d{k}", start, start + size))
        start += size
    shown = data.draw(st.integers(1, len(runs)))  # runs that stop short of the last count
    for kept in (runs, runs[:shown]):
        _KINDS["summed to the end" if kept is runs else "summed short"] += 1
        assert _summed(kept, bytearray(counts)) == _summed(kept, counts)
        assert _summed(kept, counts) == {d: sum(counts[s:e]) for d, s, e in kept}
