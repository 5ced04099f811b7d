"""The in-memory allocator's whole reading of a World's use, by class (ADR 0158).

A speed-up beside the plain reading (`InMemoryAllocator`'s tables, one lookup per node)
that tests compare it with (`tests/placement/test_whole_reading.py`). It is taken when
the allocator's usage source read the World's use whole and knows which nodes are in
use (`holdings.UsageInUse`): every other node's free capacity is its own capacity (or
zero when it is not up), so only the nodes in use are computed, in numpy, and every
node's entry is made from its class in C.

Per cluster (made once, with the allocator): each node's own capacity kind, as an
array, and each kind's vector. Per reading: the free vectors of the nodes in use
(own minus use, clamped at zero), keyed as one integer each and classed by
`numpy.unique`; each class one shared `Capacity`; per node a class number, then the
list of `Capacity` taken from the classes. No Python code runs per node.

numpy is imported when a `ClassedReading` is made (an allocator whose source knows the
nodes in use), never when `costart.placement` is imported.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import chain
from typing import TYPE_CHECKING, NamedTuple

from costart.domain.capacity import Capacity

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

Vec3 = tuple[int, int, int]
# Every vector's parts stay below this (own capacities and uses alike), so that own
# minus use and the keys made of a free vector never overflow numpy's int64. A World
# or cluster beyond it is read the plain way.
LIMIT = 1 << 62


class Classed(NamedTuple):
    """A whole reading: per node its free `Capacity` (``free``) and class number
    (``classes``: bytes while there are at most 256 classes), ``free[i] is
    capacities[classes[i]]``; the capacities are distinct, and each is some node's."""

    free: list[Capacity]
    classes: bytes | list[int]
    capacities: list[Capacity]


class ClassedReading:
    """Reads a cluster's free capacity whole from the nodes in use (see the module).

    ``own``: each node's own capacity vector, in node order; ``shared``: the one
    `Capacity` of a vector (the allocator's, so that both readings share objects)."""

    def __init__(self, own: Sequence[Vec3], shared: Callable[[Vec3], Capacity]) -> None:
        import numpy as np  # noqa: PLC0415 - here, not at import: see the module

        self._np = np
        self._shared = shared
        self.nodes = len(own)
        kinds: dict[Vec3, int] = {}
        kind = [kinds.setdefault(vec, len(kinds)) for vec in own]
        # Whether every own capacity fits (a cluster beyond it reads the plain way).
        self.usable = all(0 <= part < LIMIT for vec in kinds for part in vec)
        self._kind = np.array(kind, dtype=np.intp)  # node -> own kind
        self._own = np.array(list(kinds) or [(0, 0, 0)], dtype=np.int64).reshape(-1, 3)
        self._kinds = len(kinds)

    def read(
        self, nodes: Sequence[int], used: Sequence[Vec3], down: Sequence[int]
    ) -> Classed | None:
        """Free capacity of every node: ``nodes`` (distinct indexes) use ``used``
        (in order), every other node nothing; the nodes of ``down`` are not up (zero).
        None when a use is beyond `LIMIT` (the caller reads the plain way)."""
        np = self._np
        m = len(nodes)
        index = np.fromiter(nodes, dtype=np.intp, count=m)
        try:
            use = np.fromiter(chain.from_iterable(used), dtype=np.int64, count=3 * m)
        except OverflowError:
            return None
        use = use.reshape(m, 3)
        if m and (int(use.max()) >= LIMIT or int(use.min()) <= -LIMIT):
            return None
        free = np.maximum(self._own[self._kind[index]] - use, 0)
        # Rows to class: each own kind (the nodes not in use), the nodes in use, zero.
        rows = np.concatenate((self._own[: self._kinds], free, np.zeros((1, 3), np.int64)))
        classes, vectors = self._classes(rows, m, index, down)
        found = [self._shared(vec) for vec in vectors]
        capacities = np.empty(len(found), dtype=object)
        for number, capacity in enumerate(found):  # (no array of tuples made into rows)
            capacities[number] = capacity
        per_node: list[Capacity] = capacities[classes].tolist()
        numbers = classes.astype(np.uint8).tobytes() if len(found) <= 256 else classes.tolist()
        return Classed(per_node, numbers, found)

    def _classes(
        self, rows: npt.NDArray[np.int64], m: int, index: npt.NDArray[np.intp], down: Sequence[int]
    ) -> tuple[npt.NDArray[np.intp], list[Vec3]]:
        """Per node its class, and each class's vector: the classes are the distinct
        rows some node has, numbered in the order of their vectors."""
        np = self._np
        high = rows.max(axis=0).tolist()
        c, mem = high[1] + 1, high[2] + 1
        if (high[0] + 1) * c * mem < 1 << 63:  # one int64 key per row: a plain sort
            key = (rows[:, 0] * c + rows[:, 1]) * mem + rows[:, 2]
            _, inverse = np.unique(key, return_inverse=True)
        else:  # too wide to key: rows compared whole (slower, same classes)
            _, inverse = np.unique(rows, axis=0, return_inverse=True)
        inverse = inverse.reshape(-1)
        k = self._kinds
        classes = inverse[self._kind]  # every node: its own kind's row
        classes[index] = inverse[k : k + m]
        if down:
            classes[np.fromiter(down, dtype=np.intp, count=len(down))] = inverse[-1]
        # Only the rows some node has, renumbered in their order.
        present = np.bincount(classes, minlength=int(inverse.max()) + 1) > 0
        row_of = np.empty(len(present), dtype=np.intp)
        row_of[inverse] = np.arange(len(inverse))  # a row of each class (all alike)
        kept = rows[row_of[present]].tolist()
        if not present.all():
            classes = (np.cumsum(present) - 1)[classes]
        return classes, [(gpu, cpu, mem_gb) for gpu, cpu, mem_gb in kept]
