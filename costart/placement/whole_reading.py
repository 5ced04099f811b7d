"""The in-memory allocator's whole reading of a World's use, by class (ADR 0158).

A speed-up beside the plain reading (`InMemoryAllocator`'s tables, one lookup per node)
that tests compare it with (`tests/placement/test_whole_reading.py`). It is taken when
the allocator's usage source read the World's use whole and hands it over by node name
(`holdings.UsageInUse`): every node not in use has its own capacity free (zero when it
is not up), so only the nodes in use are computed, in numpy, and every node's entry is
then made from its class in C. No Python code runs per node.

Per cluster (made once, with the allocator): each node's own capacity kind as an array,
and each node's index as four bytes by name. Per reading: the nodes in use as indexes
(their names' bytes joined), their use as int32 rows (`marshal` writes a list of
int triples at a fixed stride: a C-level pass far cheaper than numpy's or `struct`'s
conversion of Python ints; its layout is checked before it is read, and a use it cannot
show so is read the plain way), free = own minus use clamped at zero, each free vector
keyed as one integer and classed, one shared `Capacity` per class, and per node its
class number and `Capacity`.

numpy is imported when a `ClassedReading` is made (an allocator whose source hands the
use over by name), never when `costart.placement` is imported.
"""

from __future__ import annotations

import marshal
from collections.abc import Callable, Mapping, Sequence
from struct import Struct
from typing import TYPE_CHECKING, NamedTuple

from costart.domain.capacity import Capacity

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

Vec3 = tuple[int, int, int]
_INDEX = Struct("<i")
_ABSENT = _INDEX.pack(-1)  # a name the cluster lacks
# `marshal` (version 2) writes a list of n int triples as "[" n, then per triple "(" 3
# and three times "i" and a 4-byte int: 20 bytes a triple after a 5-byte head.
_HEAD, _ROW = 5, 20
_MARKS = (
    (0, ord("(")),
    (1, 3),
    (2, 0),
    (3, 0),
    (4, 0),
    (5, ord("i")),
    (10, ord("i")),
    (15, ord("i")),
)


class Classed(NamedTuple):
    """A whole reading: per node its free `Capacity` (``free``) and class number
    (``classes``: bytes while there are at most 256 classes), ``free[i] is
    capacities[classes[i]]``; the capacities are distinct, and each is some node's."""

    free: list[Capacity]
    classes: bytes | list[int]
    capacities: list[Capacity]


class _Indexes(dict[str, bytes]):
    """Node name -> its index as 4 bytes; a name the cluster lacks -> -1."""

    def __missing__(self, name: str) -> bytes:
        return _ABSENT


class ClassedReading:
    """Reads a cluster's free capacity whole from the nodes in use (see the module).

    ``index``: the cluster's node name -> index; ``own``: each node's own capacity
    vector, in node order; ``shared``: the one `Capacity` of a vector (the allocator's,
    so that both readings share objects)."""

    def __init__(
        self,
        index: Mapping[str, int],
        own: Sequence[Vec3],
        shared: Callable[[Vec3], Capacity],
    ) -> None:
        import numpy as np  # noqa: PLC0415 - here, not at import: see the module

        self._np = np
        self._shared = shared
        self.nodes = len(own)
        kinds: dict[Vec3, int] = {}
        kind = [kinds.setdefault(vec, len(kinds)) for vec in own]
        self._kind = np.array(kind, dtype=np.intp)  # node -> own kind
        self._own_vectors = list(kinds)  # kind -> its vector
        self._kinds = len(kinds)
        self._kind_counts = np.bincount(self._kind, minlength=self._kinds)
        self._indexes = _Indexes(zip(index.keys(), map(_INDEX.pack, index.values()), strict=True))

    def read(self, use: Mapping[str, Vec3], down: Sequence[int]) -> Classed | None:
        """Free capacity of every node: each node named in ``use`` uses its entry (a
        name the cluster lacks left out), every other node nothing; the nodes of
        ``down`` are not up (zero). None when a use is not three ints from 0 below
        2**31, or too wide to key (the caller reads the plain way)."""
        np = self._np
        found = self._in_use(use)
        if found is None:
            return None
        nodes, used = found
        kinds = self._kind[nodes]
        # Each node in use keyed by its own kind and its use: the distinct pairs are
        # few, and each pair's free vector is computed once, in Python.
        pairs: list[tuple[int, Vec3]] = []
        pair_of = np.zeros(0, dtype=np.intp)
        if len(nodes):
            high = (used.max(axis=0) + 1).tolist()
            if int(used.min()) < 0 or self._kinds * high[0] * high[1] * high[2] >= 1 << 63:
                return None
            key = ((kinds * high[0] + used[:, 0]) * high[1] + used[:, 1]) * high[2] + used[:, 2]
            distinct = np.sort(np.unique_values(key))  # (by hashing: no sort of every key)
            pair_of = np.searchsorted(distinct, key)
            for pair in distinct.tolist():
                rest, mem = divmod(pair, high[2])
                rest, cpu = divmod(rest, high[1])
                kind, gpu = divmod(rest, high[0])
                pairs.append((kind, (gpu, cpu, mem)))
        # The free vectors some node has: each own kind with a node not in use, each
        # pair's, and zero for the nodes not up.
        own = self._own_vectors
        not_in_use = self._kind_counts - np.bincount(kinds, minlength=self._kinds)
        free_of_pair = [_minus(own[kind], vec) for kind, vec in pairs]
        vectors = {own[kind] for kind in np.flatnonzero(not_in_use).tolist()}
        vectors.update(free_of_pair)
        if down:
            vectors.add((0, 0, 0))
        ordered = sorted(vectors)
        number = {vec: i for i, vec in enumerate(ordered)}
        class_of_kind = np.array([number.get(vec, 0) for vec in own], dtype=np.intp)
        class_of_pair = np.array([number[vec] for vec in free_of_pair], dtype=np.intp)
        classes = class_of_kind[self._kind]  # every node: its own capacity's class
        classes[nodes] = class_of_pair[pair_of]
        if down:
            classes[np.fromiter(down, dtype=np.intp, count=len(down))] = number[(0, 0, 0)]
            present = np.bincount(classes, minlength=len(ordered)) > 0
            if not present.all():  # (a kind whose nodes not in use are all down)
                ordered = [vec for vec, kept in zip(ordered, present.tolist(), strict=True) if kept]
                classes = (np.cumsum(present) - 1)[classes]
        found_capacities = [self._shared(vec) for vec in ordered]
        capacities = np.empty(len(ordered), dtype=object)
        for i, capacity in enumerate(found_capacities):  # (no tuple made into a row)
            capacities[i] = capacity
        per_node: list[Capacity] = capacities[classes].tolist()
        if len(ordered) <= 256:
            return Classed(per_node, classes.astype(np.uint8).tobytes(), found_capacities)
        return Classed(per_node, classes.tolist(), found_capacities)

    def _in_use(
        self, use: Mapping[str, Vec3]
    ) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.int32]] | None:
        """The nodes in use (indexes; names the cluster lacks left out) and their use
        as int32 rows; None when ``use`` cannot be read so (see the module)."""
        np = self._np
        m = len(use)
        packed = marshal.dumps(list(use.values()), 2)
        if len(packed) != _HEAD + _ROW * m:
            return None
        if not m:
            return np.zeros(0, dtype=np.intp), np.zeros((0, 3), dtype=np.int32)
        grid = np.frombuffer(packed, dtype=np.uint8, offset=_HEAD).reshape(m, _ROW)
        for column, mark in _MARKS:
            if not (grid[:, column] == mark).all():
                return None
        used = np.ndarray((m, 3), "<i4", buffer=packed, offset=_HEAD + 6, strides=(_ROW, 5))
        named = b"".join(map(self._indexes.__getitem__, use.keys()))
        index = np.frombuffer(named, dtype="<i4")
        if int(index.min()) < 0:  # names the cluster lacks: left out
            kept = index >= 0
            index, used = index[kept], used[kept]
        return index.astype(np.intp), used


def _minus(own: Vec3, used: Vec3) -> Vec3:
    """Free of ``own`` after ``used``, clamped at zero per part (as the plain table)."""
    return (
        own[0] - used[0] if own[0] > used[0] else 0,
        own[1] - used[1] if own[1] > used[1] else 0,
        own[2] - used[2] if own[2] > used[2] else 0,
    )
