"""`StartCache.fits_by_class` against the plain count per node (`fit_count`), on both of
its readings: the classes as bytes translated by a table (at most 256 classes and no
count above 255) and the counts read per node by list index (more classes, or a larger
count). The whole-session tests mostly meet the first; these reach the second directly."""

from __future__ import annotations

from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from costart.domain.capacity import Capacity
from costart.domain.spec_types import Shape
from costart.placement.capacity import fit_count
from costart.placement.incremental.carried import StartCache

_BYTE = 256
_READINGS: Counter[str] = Counter()


def _start_of(free: list[Capacity]) -> StartCache:
    """A carried start whose classes are those of ``free`` (as `CarriedLedger` makes them)."""
    start = StartCache()
    start.classes = list(map(start.class_of.__getitem__, free))
    start.free = list(map(start.class_of.vecs.__getitem__, start.classes))
    start.classes_moved()
    return start


def _plain(start: StartCache, shape: Shape) -> list[int]:
    return [fit_count(vec, shape) for vec in start.free]


def _reading(start: StartCache, shape: Shape) -> str:
    counts = [fit_count(vec, shape) for vec in start.class_of.vecs]
    fits_bytes = len(counts) <= _BYTE and max(counts, default=0) < _BYTE
    return "bytes" if fits_bytes else "by index"


def test_more_than_256_classes_are_read_per_node_by_index() -> None:
    # 300 distinct free vectors: the classes do not fit in bytes.
    free = [Capacity(gpu=k % 9, cpu=k, mem_gb=4 * k) for k in range(300)] * 3
    start = _start_of(free)
    shape = Shape(gpu=1, cpu=2, mem_gb=8)
    assert len(start.class_of.vecs) == 300
    assert _reading(start, shape) == "by index"
    assert start.fits_by_class(shape) == _plain(start, shape)


def test_a_count_above_255_is_read_per_node_by_index() -> None:
    free = [Capacity(gpu=0, cpu=1000, mem_gb=64), Capacity(gpu=0, cpu=3, mem_gb=64)] * 5
    start = _start_of(free)
    shape = Shape(gpu=0, cpu=1, mem_gb=0)  # 1,000 fit the first class
    assert _reading(start, shape) == "by index"
    assert start.fits_by_class(shape) == [1000, 3] * 5


_capacities = st.builds(
    Capacity,
    gpu=st.integers(0, 8),
    cpu=st.integers(0, 600),
    mem_gb=st.integers(0, 64),
)
_shapes = st.builds(
    Shape,
    gpu=st.integers(0, 2),
    cpu=st.integers(0, 4),
    mem_gb=st.integers(0, 8),
)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(_capacities, min_size=1, max_size=40),
    st.integers(0, 320),
    st.lists(_shapes, min_size=1, max_size=4),
)
def test_counts_by_class_equal_the_plain_count_per_node(
    nodes: list[Capacity], extra_classes: int, shapes: list[Shape]
) -> None:
    # ``extra_classes`` distinct vectors more push some examples past 256 classes.
    free = nodes + [Capacity(gpu=9, cpu=k, mem_gb=100) for k in range(extra_classes)]
    start = _start_of(free)
    for shape in shapes:
        _READINGS[_reading(start, shape)] += 1
        assert start.fits_by_class(shape) == _plain(start, shape)
        # Asked again (the counts per class kept): the same.
        assert start.fits_by_class(shape) == _plain(start, shape)


def teardown_module() -> None:
    print(f"\nfits_by_class readings taken: {dict(_READINGS)}")
