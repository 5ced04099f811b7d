"""The in-memory allocator's whole reading by class (`costart.placement.whole_reading`,
ADR 0158) against its plain reading (a table lookup per node): the same free capacity
for every node, equal capacities one object, and the classes it hands the ledger
(`InMemoryAllocator.free_classes`) true of every node."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Mapping

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from costart.domain.capacity import Capacity
from costart.domain.world import World
from costart.placement import Cluster, InMemoryAllocator, Node
from costart.placement.allocator import FreeClasses
from costart.placement.holdings import UsageInUse
from costart.placement.whole_reading import ClassedReading

Vec = tuple[int, int, int]
ZERO: Vec = (0, 0, 0)
PATHS: Counter[str] = Counter()  # which way the random readings went


class _Plain:
    """A usage source with ``used`` per node and no nodes in use named: the allocator
    reads it the plain way (every node looked up in its table)."""

    def __init__(self, cluster: Cluster, use: Mapping[str, Vec]) -> None:
        self.used = _per_node(cluster, use)

    def use_of(self, nodes: Iterable[int]) -> Iterator[Vec]:
        return map(self.used.__getitem__, nodes)

    def sync(self, world: World) -> set[int] | None:
        return None


class _Named(_Plain):
    """The same use, also handed over by node name (a `UsageInUse`) while ``whole``."""

    def __init__(self, cluster: Cluster, use: Mapping[str, Vec]) -> None:
        super().__init__(cluster, use)
        self.use = dict(use)
        self.whole = True

    def in_use(self) -> Mapping[str, Vec] | None:
        return self.use if self.whole else None


def _per_node(cluster: Cluster, use: Mapping[str, Vec]) -> list[Vec]:
    used = [ZERO] * len(cluster)
    for name, vec in use.items():
        if name in cluster.index:
            used[cluster.index[name]] = vec
    return used


def _cluster(owns: list[Vec]) -> Cluster:
    return Cluster(
        ["rack"],
        [Node(f"n{i}", (f"r{i % 3}",), gpu=g, cpu=c, mem_gb=m) for i, (g, c, m) in enumerate(owns)],
    )


def _by_name(cluster: Cluster, free: list[Capacity]) -> dict[str, Capacity]:
    return {name: free[i] for name, i in cluster.index.items()}


def _assert_classes_hold(free: list[Capacity], classes: FreeClasses | None) -> None:
    """Every node's entry is its class's capacity (the same object); the classes'
    capacities are distinct and each is some node's; bytes while 256 or fewer."""
    assert classes is not None
    assert len(classes.classes) == len(free)
    assert all(f is classes.capacities[k] for f, k in zip(free, classes.classes, strict=True))
    assert len(set(classes.capacities)) == len(classes.capacities)
    assert set(classes.capacities) == set(free)
    assert isinstance(classes.classes, bytes) == (len(classes.capacities) <= 256)


def _assert_shared(free: list[Capacity]) -> None:
    """Equal capacities are one object (the allocator's sharing)."""
    assert len({id(f) for f in free}) == len(set(free))


def _reading(
    cluster: Cluster, use: Mapping[str, Vec], statuses: dict[str, str]
) -> tuple[list[Capacity], list[Capacity], InMemoryAllocator]:
    """The plain reading and the one by class of the same use, for ``cluster``."""
    cluster.sync_status(statuses)
    plain = InMemoryAllocator(cluster, _Plain(cluster, use))
    classed = InMemoryAllocator(cluster, _Named(cluster, use))
    return plain.free_capacity(World()), classed.free_capacity(World()), classed


VECS = st.tuples(st.integers(0, 12), st.integers(0, 80), st.integers(0, 600))
OWN_KINDS = st.lists(VECS, min_size=1, max_size=4)


@st.composite
def clusters_and_use(draw: st.DrawFn) -> tuple[list[Vec], dict[str, Vec], dict[str, str]]:
    kinds = draw(OWN_KINDS)
    n = draw(st.integers(1, 40))
    owns = [kinds[draw(st.integers(0, len(kinds) - 1))] for _ in range(n)]
    names = [f"n{i}" for i in range(n)] + ["gone-1", "gone-2"]  # two the cluster lacks
    in_use = draw(st.lists(st.sampled_from(names), unique=True, max_size=n + 2))
    # Some uses: zero, beyond the node (free clamps at zero), or like another's.
    use = {name: draw(st.one_of(VECS, st.just(ZERO), st.just((99, 999, 9999)))) for name in in_use}
    statuses = {
        f"n{i}": draw(st.sampled_from(["up", "up", "up", "down", "drained"])) for i in range(n)
    }
    return owns, use, statuses


@settings(max_examples=300, deadline=None)
@given(clusters_and_use())
def test_the_reading_by_class_equals_the_plain_one(
    drawn: tuple[list[Vec], dict[str, Vec], dict[str, str]],
) -> None:
    owns, use, statuses = drawn
    cluster = _cluster(owns)
    plain, classed, allocator = _reading(cluster, use, statuses)
    assert classed == plain
    _assert_shared(classed)
    _assert_classes_hold(classed, allocator.free_classes(classed))
    PATHS["by class"] += 1
    PATHS["some node not up"] += any(s != "up" for s in statuses.values())
    PATHS["a name the cluster lacks"] += any(name.startswith("gone") for name in use)
    PATHS["a use beyond its node"] += (99, 999, 9999) in use.values()
    PATHS["a zero use"] += ZERO in use.values()
    PATHS["several own kinds"] += len(set(owns)) > 1


@pytest.fixture(scope="module", autouse=True)
def _print_paths() -> Iterator[None]:
    yield
    print(f"\nwhole readings by path: {dict(PATHS)}")


def test_the_random_readings_took_every_path() -> None:
    """(Runs after the random test in this module: each kind of input was drawn.)"""
    if PATHS["by class"] == 0:
        pytest.skip("the random test did not run before this one")
    for path in (
        "some node not up",
        "a name the cluster lacks",
        "a use beyond its node",
        "a zero use",
        "several own kinds",
    ):
        assert PATHS[path] > 10, path


def test_a_busy_cluster_reads_each_node_by_its_class() -> None:
    """Nodes of two kinds, some used in part, one full, one overfull, one down, one
    drained, a name the cluster lacks: each node's entry as the plain table has it."""
    owns = [(8, 64, 512)] * 6 + [(4, 32, 256)] * 3
    cluster = _cluster(owns)
    use = {"n0": (2, 8, 64), "n1": (8, 64, 512), "n2": (9, 70, 600), "n6": (2, 8, 64)}
    use |= {"n4": (1, 1, 1), "gone": (1, 1, 1)}
    plain, classed, allocator = _reading(cluster, use, {"n4": "down", "n7": "drained"})
    assert classed == plain
    assert _by_name(cluster, classed) == {
        "n0": Capacity(6, 56, 448),
        "n1": Capacity(),
        "n2": Capacity(),
        "n3": Capacity(8, 64, 512),
        "n4": Capacity(),
        "n5": Capacity(8, 64, 512),
        "n6": Capacity(2, 24, 192),
        "n7": Capacity(),
        "n8": Capacity(4, 32, 256),
    }
    classes = allocator.free_classes(classed)
    _assert_classes_hold(classed, classes)
    assert classes is not None and len(classes.capacities) == 5


def test_more_than_256_classes_are_numbered_in_a_list() -> None:
    owns = [(8, 64, 512)] * 300
    use = {f"n{i}": (0, 0, i) for i in range(300)}
    cluster = _cluster(owns)
    plain, classed, allocator = _reading(cluster, use, {})
    assert classed == plain
    classes = allocator.free_classes(classed)
    _assert_classes_hold(classed, classes)
    assert classes is not None and isinstance(classes.classes, list)


@pytest.mark.parametrize(
    "use",
    [
        {"n0": (1, 2, 1 << 31)},  # beyond 32 bits: marshal writes it another way
        {"n0": (1, -2, 3)},  # negative: no key for it
        {"n0": (True, 2, 3)},  # not an int
    ],
    ids=["beyond-32-bits", "negative", "a-bool"],
)
def test_a_use_the_classes_cannot_show_is_read_the_plain_way(use: dict[str, Vec]) -> None:
    cluster = _cluster([(8, 64, 512), (8, 64, 512)])
    plain, classed, allocator = _reading(cluster, use, {})
    assert classed == plain
    assert allocator.free_classes(classed) is None
    reading = ClassedReading(cluster.index, [0, 0], [(8, 64, 512)], lambda vec: Capacity(*vec))
    assert reading.read(use, []) is None


def test_uses_of_other_shapes_that_marshal_to_the_same_length_are_refused() -> None:
    """A triple too long and one too short write as many bytes as two triples: only
    the marks checked per triple tell them from two triples (never read shifted)."""
    cluster = _cluster([(8, 64, 512)] * 2)
    reading = ClassedReading(cluster.index, [0, 0], [(8, 64, 512)], lambda vec: Capacity(*vec))
    use: dict[str, object] = {"n0": (1, 2, 3, 4), "n1": (1, 2)}
    assert reading.read(use, []) is None  # type: ignore[arg-type]
    assert reading.read({"n0": (1, 2, 3), "n1": (1, 2, 3)}, []) is not None


def test_the_classes_are_given_only_for_the_very_list_of_a_whole_reading() -> None:
    cluster = _cluster([(8, 64, 512)] * 4)
    source = _Named(cluster, {"n1": (1, 2, 3)})
    allocator = InMemoryAllocator(cluster, source)
    free = allocator.free_capacity(World())
    assert allocator.free_classes(list(free)) is None  # an equal copy is not it
    _assert_classes_hold(free, allocator.free_classes(free))
    allocator.commit()
    assert allocator.free_classes(free) is None  # the session ended
    source.whole = False  # a reading of what moved (here: nothing)
    again = allocator.free_capacity(World())
    assert again == free and allocator.free_classes(again) is None
    plain = InMemoryAllocator(cluster)  # counted from scratch: never by class
    assert plain.free_classes(plain.free_capacity(World())) is None


def test_a_reading_of_what_moved_after_one_by_class_starts_from_it() -> None:
    """The reading by class becomes the allocator's settled list: a later reading of
    the moved nodes alone computes from it (as the plain reading's would)."""
    cluster = _cluster([(8, 64, 512)] * 4)
    source = _Named(cluster, {"n1": (1, 2, 3)})
    allocator = InMemoryAllocator(cluster, source)
    allocator.free_capacity(World())
    allocator.commit()

    class _Moved(_Named):
        def sync(self, world: World) -> set[int] | None:
            return {cluster.index["n2"]}

    moved = _Moved(cluster, {"n1": (1, 2, 3), "n2": (8, 0, 0)})
    moved.whole = False
    allocator._usage = moved
    second = allocator.free_capacity(World())
    assert _by_name(cluster, second) == {
        "n0": Capacity(8, 64, 512),
        "n1": Capacity(7, 62, 509),
        "n2": Capacity(0, 64, 512),
        "n3": Capacity(8, 64, 512),
    }
    assert second[cluster.index["n0"]] is second[cluster.index["n3"]]


def test_a_source_naming_the_nodes_in_use_is_a_usage_in_use() -> None:
    cluster = _cluster([(1, 1, 1)])
    assert isinstance(_Named(cluster, {}), UsageInUse)
    assert not isinstance(_Plain(cluster, {}), UsageInUse)
