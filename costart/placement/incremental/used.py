"""`UsedCount`: what the World's live members hold or have placed, per node, for an
allocator (a `UsageSource`; `costart.placement.holdings.UsageCount` counts the same from
scratch), read from where the World's folds keep it (`World.node_use`, ADR 0148).

A first sync (a fresh step's first session) reads the World's use of every node in use
(one lookup of each such node's name, in C), not every live member's tasks. A later sync
of the same World's use reads only the nodes that moved since (`NodeUse.moved_since`); a
World it has not read, or a use counted afresh, is read whole.
"""

from __future__ import annotations

from collections import deque
from typing import cast

from costart.domain.node_use import NodeUse
from costart.domain.world import World
from costart.placement.capacity import ZERO, Vec
from costart.placement.cluster import Cluster

# A whole reading looks every node's name up when at least one node in DENSE is in use.
DENSE = 8


class UsedCount:
    """Per node: capacity held or used by live members (``used``), as of the last sync."""

    def __init__(self, cluster: Cluster) -> None:
        self._cluster = cluster
        self.used: list[Vec] = [ZERO] * len(cluster)
        self._read: NodeUse | None = None  # the World's use read last
        self._mark = 0  # ... and where its moved nodes ended then
        self._nonzero = False  # whether any entry was set since construction

    def sync(self, world: World) -> set[int] | None:
        """Bring ``used`` up to ``world``; returns the nodes whose entry may have changed
        since the previous sync (a superset), or None: every node may have. The first
        sync reports the nodes in use (before it, every entry is zero), or None when
        it read every node's name (`_read_whole`)."""
        use = world.node_use
        moved = use.moved_since(self._mark) if use is self._read else None
        self._read, self._mark = use, use.mark
        if moved is None:
            return self._read_whole(use)
        index, used, changed = self._cluster.index, self.used, set()
        for name in moved:
            i = index.get(name)
            if i is not None:
                used[i] = use.get(name)
                changed.add(i)
        return changed

    def _read_whole(self, use: NodeUse) -> set[int] | None:
        """Every node's entry from ``use`` (a name the cluster lacks left out). When at
        least one node in DENSE is in use, every node's name is looked up in ``use``
        (one C-level pass, the entries in node order) and every node reported; else the
        nodes in use are looked up in the cluster by name and put in place, each a few
        C-level passes (about seven times a dense lookup's instructions, ADR 0154)."""
        if len(use) * DENSE >= len(self._cluster):
            self.used = use.of_names(self._cluster.index)  # (its keys: the names in order)
            self._nonzero = True
            return None
        index = self._cluster.index
        found = list(map(index.get, use.names()))
        vecs = list(use.vectors())
        if None in found:
            kept = [(i, v) for i, v in zip(found, vecs, strict=True) if i is not None]
            found, vecs = [i for i, _ in kept], [v for _, v in kept]
        nodes = cast(list[int], found)
        first = not self._nonzero
        if not first:
            self.used = [ZERO] * len(self._cluster)
        deque(map(self.used.__setitem__, nodes, vecs), maxlen=0)
        self._nonzero = True
        return set(nodes) if first else None
