"""`Cluster.sync_status` visits only reported nodes and the nodes it knows are not up;
after it, every node's status must be the reported one (absent: up), whatever was set
before."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from costart.placement.cluster import NODE_STATUSES

from .builders import a_cluster

NAMES = [node.name for node in a_cluster(blocks=1, racks=2, nodes=2).nodes]
STATUS = st.sampled_from(NODE_STATUSES)
SET = st.tuples(st.just("set"), st.sampled_from(NAMES), STATUS)
SYNC = st.tuples(
    st.just("sync"),
    st.dictionaries(st.sampled_from([*NAMES, "not-a-node"]), st.sampled_from(["down", "drained"])),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(SET, SYNC), max_size=12))
def test_after_a_sync_every_node_has_its_reported_status(ops: list[tuple[Any, ...]]) -> None:
    cluster = a_cluster(blocks=1, racks=2, nodes=2)
    for op in ops:
        if op[0] == "set":
            cluster.set_status(op[1], op[2])
        else:
            reported = op[1]
            cluster.sync_status(reported)
            assert cluster.status == [reported.get(name, "up") for name in NAMES]
        assert cluster.status_now() == tuple(cluster.status)  # (`status_now` follows)


def test_the_status_as_a_tuple_is_one_object_until_a_status_changes() -> None:
    cluster = a_cluster(blocks=1, racks=1, nodes=3)
    now = cluster.status_now()
    assert now == ("up", "up", "up") and cluster.status_now() is now
    cluster.sync_status({"b0-r0-n0": "up"})  # no change: the same object
    assert cluster.status_now() is now
    cluster.sync_status({"b0-r0-n1": "drained"})
    assert cluster.status_now() == ("up", "drained", "up") == tuple(cluster.status)
    later = cluster.status_now()
    cluster.set_status("b0-r0-n1", "down")
    assert cluster.status_now() == ("up", "down", "up") and later == ("up", "drained", "up")
