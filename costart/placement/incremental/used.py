"""`UsedCount`: what the World's live members hold or have placed, per node, for an
allocator (a `UsageSource`; `costart.placement.holdings.UsageCount` counts the same from
scratch), read from where the World's folds keep it (`World.node_use`, ADR 0148).

A whole reading (a fresh step's first session, or a World it has not read) looks each
node in use up in the cluster by name (in C) and keeps the nodes in use with their use
(`in_use`, what the in-memory allocator computes from, ADR 0158); the per-node list
``used`` is made from them when first read. A later sync of the same World's use reads
only the nodes that moved since (`NodeUse.moved_since`); a World it has not read, or a
use counted afresh, is read whole.
"""

from __future__ import annotations

from collections import deque
from typing import cast

from costart.domain.node_use import NodeUse
from costart.domain.world import World
from costart.placement.capacity import ZERO, Vec
from costart.placement.cluster import Cluster

# A first whole reading reports the nodes in use as a set when fewer than one node in
# DENSE is in use (an allocator then computes those alone), else None (every node).
DENSE = 8


class UsedCount:
    """Per node: capacity held or used by live members (``used``), as of the last sync."""

    def __init__(self, cluster: Cluster) -> None:
        self._cluster = cluster
        self._used: list[Vec] | None = [ZERO] * len(cluster)
        # The last whole reading's nodes in use and their use (None after a sync that
        # read what moved): ``used`` is made from it when first read.
        self._in_use: tuple[list[int], list[Vec]] | None = None
        self._read: NodeUse | None = None  # the World's use read last
        self._mark = 0  # ... and where its moved nodes ended then
        self._nonzero = False  # whether any entry was set since construction

    @property
    def used(self) -> list[Vec]:
        """Per node: its use as of the last sync (made from a whole reading's nodes in
        use on first read: a reader that asks `in_use` never pays for it)."""
        if self._used is None:
            nodes, vecs = cast(tuple[list[int], list[Vec]], self._in_use)
            used = [ZERO] * len(self._cluster)
            deque(map(used.__setitem__, nodes, vecs), maxlen=0)
            self._used = used
        return self._used

    def in_use(self) -> tuple[list[int], list[Vec]] | None:
        """The nodes in use and their use, when the last sync read the World's use
        whole (`holdings.UsageInUse`); else None."""
        return self._in_use

    def sync(self, world: World) -> set[int] | None:
        """Bring ``used`` up to ``world``; returns the nodes whose entry may have changed
        since the previous sync (a superset), or None: every node may have. A first
        sync reports the nodes in use (before it, every entry is zero) when they are
        few (`DENSE`), else None."""
        use = world.node_use
        moved = use.moved_since(self._mark) if use is self._read else None
        self._read, self._mark = use, use.mark
        if moved is None:
            return self._read_whole(use)
        index, used, changed = self._cluster.index, self.used, set()
        self._in_use = None
        for name in moved:
            i = index.get(name)
            if i is not None:
                used[i] = use.get(name)
                changed.add(i)
        return changed

    def _read_whole(self, use: NodeUse) -> set[int] | None:
        """The nodes in use (a name the cluster lacks left out) with their use, each
        name looked up in the cluster's index in C; ``used`` made from them on demand."""
        index = self._cluster.index
        found = list(map(index.get, use.names()))
        vecs = list(use.vectors())
        if None in found:
            kept = [(i, v) for i, v in zip(found, vecs, strict=True) if i is not None]
            found, vecs = [i for i, _ in kept], [v for _, v in kept]
        nodes = cast(list[int], found)
        self._in_use, self._used = (nodes, vecs), None
        first, self._nonzero = not self._nonzero, True
        if first and len(nodes) * DENSE < len(self._cluster):
            return set(nodes)
        return None
