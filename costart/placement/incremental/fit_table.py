"""`fit_counts` by table: a node's fit count read from a table of the distinct vectors
seen, instead of computed node by node (`costart.placement.capacity.fit_counts` is the
plain version the tests compare it with).

Most nodes of a cluster are alike, and so are most of their free vectors: a session
over tens of thousands of nodes sees a few dozen distinct ones. Computing a shape's
count once per distinct vector and mapping the nodes through the table is one
C-level pass (a dict lookup per node) instead of a `min()` call per node.
"""

from __future__ import annotations

from collections.abc import Sequence

from costart.domain.spec_types import Shape
from costart.placement.capacity import FitCountTable, Vec, fit_counts
from costart.placement.cluster import Cluster

MAX_TABLE = 4096  # distinct vectors kept per shape before a table starts afresh


class FitTables:
    """One `FitCountTable` per shape, kept across sessions (they depend on nothing else)."""

    def __init__(self) -> None:
        self._tables: dict[Shape, FitCountTable] = {}

    def fit_counts(self, cluster: Cluster, base: Sequence[Vec], shape: Shape) -> list[int]:
        """What `fit_counts` returns for ``base`` and ``shape``."""
        if shape.gpu_type is not None:
            # Typed shapes also read the node's type: the plain pass keeps them exact.
            return fit_counts(cluster, base, shape)
        table = self._tables.get(shape)
        if table is None or len(table) > MAX_TABLE:
            if len(self._tables) > MAX_TABLE:
                self._tables.clear()  # only reuse is lost, never a count
            table = self._tables[shape] = FitCountTable(shape)
        return list(map(table.__getitem__, base))
