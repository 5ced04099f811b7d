"""`UsedCount`: what the World's live members hold or have placed, per node, for an
allocator (a `UsageSource`; `costart.placement.holdings.UsageCount` counts the same from
scratch), read from where the World's folds keep it (`World.node_use`, ADR 0148).

The use is kept by node name, not as a list of every node: a whole reading (a fresh
step's first session, or a World it has not read) is a copy of the World's use by name
(`in_use`, what the in-memory allocator computes from, ADR 0158) with each name's node
index (`in_use_nodes`, looked up once for both, by the names' identity: ADR 0160); an
allocator reads the nodes it computes by index (`use_of`), and no per-node list is
made, now or at a later sync (ADR 0159). A later sync of the same World's use reads only the nodes that moved since
(`NodeUse.moved_since`); a World it has not read, or a use counted afresh, is read
whole.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from itertools import repeat

import numpy as np
import numpy.typing as npt

from costart.domain.node_use import NodeUse
from costart.domain.world import World
from costart.placement.capacity import ZERO, Vec
from costart.placement.cluster import Cluster
from costart.placement.incremental.node_index import IdentityIndex

# A first whole reading reports the nodes in use as a set when fewer than one node in
# DENSE is in use (an allocator then computes those alone), else None (every node).
DENSE = 8


class UsedCount:
    """Per node: capacity held or used by live members, as of the last sync, kept by
    node name (`use_of` reads it per node index)."""

    def __init__(self, cluster: Cluster) -> None:
        self._cluster = cluster
        self._identity = IdentityIndex(cluster.index)  # many names' indexes at once
        # node index -> name: the index's keys, interned as the World's use keeps them
        self._names = self._identity.names
        # Each node's use by name (no entry, or `ZERO`: nothing used): after a whole
        # reading, a copy of the World's (names the cluster lacks included, never read
        # here), then moved name by name.
        self._by_name: dict[str, Vec] = {}
        # After a whole reading: each of its names' node index (-1 for a name the
        # cluster lacks); None after a sync that read what moved.
        self._in_use_nodes: npt.NDArray[np.intp] | None = None
        self._read: NodeUse | None = None  # the World's use read last
        self._mark = 0  # ... and where its moved nodes ended then
        self._nonzero = False  # whether a whole reading was made since construction

    def use_of(self, nodes: Iterable[int]) -> Iterator[Vec]:
        """Each of ``nodes``' use, in their order (two lookups a node, in C)."""
        return map(self._by_name.get, map(self._names.__getitem__, nodes), repeat(ZERO))

    @property
    def used(self) -> list[Vec]:
        """Every node's use, in node order (a list made on each call: a reader of a
        few nodes asks `use_of`)."""
        return list(self.use_of(range(len(self._names))))

    def in_use(self) -> dict[str, Vec] | None:
        """The nodes in use and their use, when the last sync read the World's use
        whole (`holdings.UsageInUse`); else None."""
        return self._by_name if self._in_use_nodes is not None else None

    def in_use_nodes(self) -> npt.NDArray[np.intp] | None:
        """With `in_use`: each of its names' node index, in its order (-1 for a name
        the cluster lacks); else None."""
        return self._in_use_nodes

    def sync(self, world: World) -> set[int] | None:
        """Bring the use up to ``world``; returns the nodes whose entry may have changed
        since the previous sync (a superset), or None: every node may have. A first
        sync reports the nodes in use (before it, every entry is zero) when they are
        few (`DENSE`), else None."""
        use = world.node_use
        moved = use.moved_since(self._mark) if use is self._read else None
        self._read, self._mark = use, use.mark
        if moved is None:
            return self._read_whole(use)
        index, by_name, changed = self._cluster.index, self._by_name, set()
        self._in_use_nodes = None
        for name in moved:
            i = index.get(name)
            if i is not None:
                by_name[name] = use.get(name)
                changed.add(i)
        return changed

    def _read_whole(self, use: NodeUse) -> set[int] | None:
        """A copy of ``use`` by node name and each name's node index, both in C: no
        list of every node is made (ADR 0159). A first reading of few nodes in use
        (`DENSE`) reports them."""
        self._by_name = in_use = use.as_dict()
        m = len(in_use)
        self._in_use_nodes = nodes = self._identity.indexes(in_use)
        first, self._nonzero = not self._nonzero, True
        if first and m * DENSE < len(self._names):
            return set(nodes[nodes >= 0].tolist())
        return None
