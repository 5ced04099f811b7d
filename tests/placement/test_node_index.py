"""Node names to indexes by identity (`IdentityIndex`, ADR 0160) against the plain
dict lookup, and the interning both sides rely on (the cluster's index here, the
World's use in `tests/domain/test_node_use.py`).

Random names are drawn from a cluster's own (interned) objects, from equal strings made
apart (other objects: looked up the plain way), and from names the cluster lacks; the
answer is the plain lookup's every time, and how often each way was taken is printed.
"""

from __future__ import annotations

import sys
from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from costart.placement import Cluster, Node
from costart.placement.incremental.node_index import IdentityIndex, plain_indexes

WAYS: Counter[str] = Counter()


def _cluster(count: int) -> Cluster:
    return Cluster(["rack"], [Node(f"idx-n{i}", (f"r{i % 3}",), gpu=8) for i in range(count)])


def _apart(name: str) -> str:
    """An equal string that is another object (never the interned one)."""
    return (name + ".")[:-1]


def test_the_cluster_keeps_its_index_names_interned() -> None:
    made = ["".join(["own-", str(i)]) for i in range(3)]
    cluster = Cluster(["rack"], [Node(name, ("r",)) for name in made])
    for key in cluster.index:
        assert sys.intern(_apart(key)) is key


@settings(max_examples=150, deadline=None)
@given(
    size=st.integers(0, 40),
    picks=st.lists(
        st.tuples(st.sampled_from(["own", "apart", "lacking"]), st.integers(0, 60)),
        max_size=60,
    ),
)
def test_identity_finds_what_the_plain_lookup_finds(
    size: int, picks: list[tuple[str, int]]
) -> None:
    cluster = _cluster(size)
    own = list(cluster.index)
    names = []
    for way, i in picks:
        if way == "lacking" or not own:
            names.append(f"lacking-{i}")
            WAYS["lacking"] += 1
        elif way == "own":
            names.append(own[i % len(own)])
            WAYS["own object"] += 1
        else:
            names.append(_apart(own[i % len(own)]))
            WAYS["equal, other object"] += 1
    identity = IdentityIndex(cluster.index)
    found = identity.indexes(names)
    plain = plain_indexes(cluster.index, names, len(names))
    assert found.tolist() == plain.tolist()
    assert found.dtype == plain.dtype
    own_objects = {id(name) for name in own}
    by_address = [
        i if id(name) in own_objects else -1 for name, i in zip(names, plain.tolist(), strict=True)
    ]
    assert identity.by_address(names).tolist() == by_address


def test_each_way_was_taken() -> None:
    """Each kind of name was drawn by the property above (run here if it has not run
    yet, as when this test is picked alone)."""
    if not WAYS:
        test_identity_finds_what_the_plain_lookup_finds()
    print("identity index ways:", dict(WAYS))
    assert WAYS["own object"] and WAYS["equal, other object"] and WAYS["lacking"]


def test_a_dict_of_names_reads_its_keys_in_order() -> None:
    cluster = _cluster(10)
    use = {sys.intern("idx-n7"): (1, 0, 0), "nowhere": (1, 0, 0), _apart("idx-n2"): (2, 0, 0)}
    at = cluster.index
    assert IdentityIndex(at).indexes(use).tolist() == [at["idx-n7"], -1, at["idx-n2"]]


def test_every_name_of_a_large_cluster_is_found_by_its_address() -> None:
    """Thousands of names in a table at most half full: probe runs past other names'
    slots are common, and each ends on its own name or an empty slot."""
    cluster = _cluster(5000)
    own = list(cluster.index)
    names = [*own[::-1], _apart(own[7]), "lacking"]
    identity = IdentityIndex(cluster.index)
    plain = plain_indexes(cluster.index, names, len(names)).tolist()
    assert identity.indexes(names).tolist() == plain
    assert identity.by_address(names).tolist() == [*plain[:-2], -1, -1]
