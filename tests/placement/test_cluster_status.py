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
