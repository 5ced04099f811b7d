"""`StartCache.fits_by_class` against the plain count per node (`fit_count`), on both of
its readings: the classes as bytes translated by a table into a byte array of counts (at
most 256 classes, and no count above 255 for any vector up to the cluster's largest)
and the counts read per node by list index into a list (more classes, or a count that
could pass 255). The whole-session tests mostly meet the first; these reach the second
directly."""

from __future__ import annotations

from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from costart.domain.capacity import Capacity
from costart.domain.spec_types import Shape
from costart.placement.capacity import Vec, fit_count
from costart.placement.incremental.carried import StartCache

_BYTE = 256
_READINGS: Counter[str] = Counter()


def _start_of(free: list[Capacity]) -> StartCache:
    """A carried start whose classes are those of ``free`` (as `CarriedLedger` makes them:
    bytes while every class number fits in one)."""
    start = StartCache()
    classes = list(map(start.class_of.__getitem__, free))
    start.classes = bytearray(classes) if max(classes) < _BYTE else classes
    start.free = list(map(start.class_of.vecs.__getitem__, classes))
    return start


def _largest(free: list[Capacity]) -> Vec:
    return (max(c.gpu for c in free), max(c.cpu for c in free), max(c.mem_gb for c in free))


def _plain(start: StartCache, shape: Shape) -> list[int]:
    return [fit_count(vec, shape) for vec in start.free]


def _reading(start: StartCache, shape: Shape, largest: Vec) -> str:
    counts = [fit_count(vec, shape) for vec in start.class_of.vecs]
    fits_bytes = (
        len(counts) <= _BYTE
        and max(counts, default=0) < _BYTE
        and fit_count(largest, shape) < _BYTE
    )
    return "bytes" if fits_bytes else "by index"


def _read(start: StartCache, shape: Shape, largest: Vec) -> list[int]:
    """`fits_by_class`, checked to be of the kind its reading promises, as a list."""
    counts = start.fits_by_class(shape, largest)
    kind = bytearray if _reading(start, shape, largest) == "bytes" else list
    assert type(counts) is kind
    return list(counts)


def test_more_than_256_classes_are_read_per_node_by_index() -> None:
    # 300 distinct free vectors: the classes do not fit in bytes.
    free = [Capacity(gpu=k % 9, cpu=k, mem_gb=4 * k) for k in range(300)] * 3
    start = _start_of(free)
    shape = Shape(gpu=1, cpu=2, mem_gb=8)
    assert len(start.class_of.vecs) == 300
    assert _reading(start, shape, _largest(free)) == "by index"
    assert _read(start, shape, _largest(free)) == _plain(start, shape)


def test_a_count_above_255_is_read_per_node_by_index() -> None:
    free = [Capacity(gpu=0, cpu=1000, mem_gb=64), Capacity(gpu=0, cpu=3, mem_gb=64)] * 5
    start = _start_of(free)
    shape = Shape(gpu=0, cpu=1, mem_gb=0)  # 1,000 fit the first class
    assert _reading(start, shape, _largest(free)) == "by index"
    assert _read(start, shape, _largest(free)) == [1000, 3] * 5


def test_a_count_that_could_pass_255_is_read_into_a_list() -> None:
    # Every count now is small, but a node of the cluster could hold 300: the session
    # may write such a count in place (as capacity is given back), which no byte holds.
    free = [Capacity(gpu=1, cpu=3, mem_gb=8)] * 4
    start = _start_of(free)
    shape = Shape(gpu=0, cpu=1, mem_gb=0)
    assert _reading(start, shape, (1, 300, 8)) == "by index"
    assert _read(start, shape, (1, 300, 8)) == [3] * 4
    assert _reading(start, shape, (1, 255, 8)) == "bytes"
    assert _read(start, shape, (1, 255, 8)) == [3] * 4


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
    largest = _largest(free)
    for shape in shapes:
        _READINGS[_reading(start, shape, largest)] += 1
        assert _read(start, shape, largest) == _plain(start, shape)
        # Asked again (the counts per class kept): the same.
        assert _read(start, shape, largest) == _plain(start, shape)


def teardown_module() -> None:
    print(f"\nfits_by_class readings taken: {dict(_READINGS)}")
