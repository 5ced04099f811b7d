"""`UsedCount`: what the World's live members hold or have placed, per node, for an
allocator (a `UsageSource`; `costart.placement.holdings.UsageCount` counts the same from
scratch), read from where the World's folds keep it (`World.node_use`, ADR 0148).

A whole reading (a fresh step's first session, or a World it has not read) keeps a copy
of the World's use by node name (`in_use`, what the in-memory allocator computes from,
ADR 0158); the per-node list ``used`` is made from it when first read. A later sync of
the same World's use reads only the nodes that moved since (`NodeUse.moved_since`); a
World it has not read, or a use counted afresh, is read whole.
"""

from __future__ import annotations

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
        # The last whole reading: the World's use by node name, copied (None after a
        # sync that read what moved); ``used`` is made from it when first read.
        self._in_use: dict[str, Vec] | None = None
        self._read: NodeUse | None = None  # the World's use read last
        self._mark = 0  # ... and where its moved nodes ended then
        self._nonzero = False  # whether a whole reading was made since construction

    @property
    def used(self) -> list[Vec]:
        """Per node: its use as of the last sync (made from a whole reading's nodes in
        use on first read: a reader that asks `in_use` never pays for it)."""
        if self._used is None:
            index, used = self._cluster.index, [ZERO] * len(self._cluster)
            for name, vec in cast(dict[str, Vec], self._in_use).items():
                i = index.get(name)
                if i is not None:  # (a name the cluster lacks left out)
                    used[i] = vec
            self._used = used
        return self._used

    def in_use(self) -> dict[str, Vec] | None:
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
        """A copy of ``use`` by node name (in C); ``used`` made from it on demand. A
        first reading of few nodes in use (`DENSE`) reports them."""
        self._in_use, self._used = use.as_dict(), None
        first, self._nonzero = not self._nonzero, True
        if first and len(self._in_use) * DENSE < len(self._cluster):
            index = self._cluster.index
            return {i for i in map(index.get, self._in_use) if i is not None}
        return None
