"""The in-memory allocator's whole reading of a World's use, by class (ADR 0158).

A speed-up beside the plain reading (`InMemoryAllocator`'s tables, one lookup per node)
that tests compare it with (`tests/placement/test_whole_reading.py`). It is taken when
the allocator's usage source read the World's use whole and hands it over by node name
(`holdings.UsageInUse`): every node not in use has its own capacity free (zero when it
is not up), so only the nodes in use are computed, in numpy, and every node's entry is
then made from its class in C. No Python code runs per node.

Per cluster (made once, with the allocator): each node's own capacity kind as an array.
Per reading: the nodes in use as indexes (each name looked up in the cluster's index,
in C), their use as three int32 columns (`marshal` writes a list
of int triples at a fixed stride: a C-level pass cheaper than numpy's or `struct`'s
conversion of Python ints; its layout is checked before it is read, and a use it cannot
show so is read the plain way), each node in use keyed by its own kind and its use, the
distinct keys (few) found by a sort and their free vectors computed in Python, one shared
`Capacity` per distinct free vector, and per node its class number and `Capacity`.

numpy is imported when a `ClassedReading` is made, not when this module is.
"""

from __future__ import annotations

import marshal
from collections.abc import Callable, Iterable, Mapping, Sequence
from itertools import repeat
from typing import TYPE_CHECKING, NamedTuple

from costart.domain.capacity import Capacity

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

Vec3 = tuple[int, int, int]
# `marshal` (version 2) writes a list of n int triples as "[" n, then per triple "(" 3
# and three times "i" and a 4-byte int: 20 bytes a triple after a 5-byte head. Read as
# two 8-byte words and one of 4, the marks are the low 6 bytes of the first word and
# bytes 2 and 7 of the second; the ints start at bytes 6, 11 and 16.
_HEAD, _ROW = 5, 20
_HEAD_MASK, _HEAD_MARKS = 0xFFFF_FFFF_FFFF, int.from_bytes(b"(\x03\x00\x00\x00i", "little")
_MIDDLE_MASK, _MIDDLE_MARKS = 0xFF00_0000_00FF_0000, (ord("i") << 56) | (ord("i") << 16)
_FIELDS = ["head", "middle", "gpu", "cpu", "mem"], ["<u8", "<u8", "<i4", "<i4", "<i4"]
_OFFSETS = [0, 8, 6, 11, 16]


class Classed(NamedTuple):
    """A whole reading: per node its free `Capacity` (``free``) and class number
    (``classes``: bytes while there are at most 256 classes), ``free[i] is
    capacities[classes[i]]``; the capacities are distinct, and each is some node's."""

    free: list[Capacity]
    classes: bytes | list[int]
    capacities: list[Capacity]


class ClassedReading:
    """Reads a cluster's free capacity whole from the nodes in use (see the module).

    ``index``: the cluster's node name -> index; ``kinds``: each node's own capacity's
    kind, in node order (None: every node's is 0); ``own``: each kind's vector; ``shared``: the one `Capacity` of a vector (the allocator's,
    so that both readings share objects)."""

    def __init__(
        self,
        index: Mapping[str, int],
        kinds: Iterable[int] | None,
        own: Sequence[Vec3],
        shared: Callable[[Vec3], Capacity],
    ) -> None:
        import numpy as np  # noqa: PLC0415 - here, not at import: see the module

        self._np = np
        self._shared = shared
        self._index = index
        self._own_vectors = list(own)  # kind -> its vector
        self._kinds = len(own)
        self.nodes = len(index)
        if kinds is None:  # (one kind: no pass over the nodes)
            self._kind = np.zeros(self.nodes, dtype=np.intp)
        else:  # node -> its own capacity's kind
            self._kind = np.fromiter(kinds, dtype=np.intp, count=self.nodes)
        self._kind_counts = np.bincount(self._kind, minlength=self._kinds)
        # One triple as marshal wrote it (fields overlap: the marks, and the ints apart).
        names, formats = _FIELDS
        self._rows = np.dtype(
            {"names": names, "formats": formats, "offsets": _OFFSETS, "itemsize": _ROW}
        )

    def read(
        self,
        use: Mapping[str, Vec3],
        down: Sequence[int],
        nodes: npt.NDArray[np.intp] | None = None,
    ) -> Classed | None:
        """Free capacity of every node: each node named in ``use`` uses its entry (a
        name the cluster lacks left out), every other node nothing; the nodes of
        ``down`` are not up (zero). ``nodes``: each name's node index in ``use``'s
        order (-1: lacking), if the caller looked them up already. None when a use is
        not three ints from 0 below 2**31, or too wide to key (the caller reads the
        plain way)."""
        np = self._np
        found = self._in_use(use, nodes)
        if found is None:
            return None
        nodes, used = found
        kinds = self._kind[nodes]
        # Each node in use keyed by its own kind and its use: the distinct pairs are
        # few, and each pair's free vector is computed once, in Python.
        pairs: list[tuple[int, Vec3]] = []
        pair_of = np.zeros(0, dtype=np.intp)
        if len(nodes):
            gpu, cpu, mem = (column.astype(np.int64) for column in used)
            if min(int(gpu.min()), int(cpu.min()), int(mem.min())) < 0:
                return None
            high = [int(gpu.max()) + 1, int(cpu.max()) + 1, int(mem.max()) + 1]
            if self._kinds * high[0] * high[1] * high[2] >= 1 << 63:
                return None
            key = ((kinds * high[0] + gpu) * high[1] + cpu) * high[2] + mem
            ordered_keys = np.sort(key)  # (in C, vectorised: no hash per key)
            starts = np.ones(len(key), dtype=np.bool_)
            np.not_equal(ordered_keys[1:], ordered_keys[:-1], out=starts[1:])
            distinct = ordered_keys[starts]
            pair_of = np.searchsorted(distinct, key)
            for pair in distinct.tolist():
                rest, m = divmod(pair, high[2])
                rest, c = divmod(rest, high[1])
                kind, g = divmod(rest, high[0])
                pairs.append((kind, (g, c, m)))
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
        if self._kinds == 1:  # (alike nodes, the common case: no take per node)
            classes = np.full(self.nodes, class_of_kind[0], dtype=np.intp)
        else:
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
        self, use: Mapping[str, Vec3], nodes: npt.NDArray[np.intp] | None
    ) -> tuple[npt.NDArray[np.intp], tuple[npt.NDArray[np.int32], ...]] | None:
        """The nodes in use (indexes; names the cluster lacks left out) and their use
        as three int32 columns; None when ``use`` cannot be read so (see the module)."""
        np = self._np
        m = len(use)
        packed = marshal.dumps(list(use.values()), 2)
        if len(packed) != _HEAD + _ROW * m:
            return None
        if not m:
            return np.zeros(0, dtype=np.intp), ()
        rows = np.ndarray((m,), self._rows, buffer=packed, offset=_HEAD)
        if not ((rows["head"] & _HEAD_MASK) == _HEAD_MARKS).all():
            return None
        if not ((rows["middle"] & _MIDDLE_MASK) == _MIDDLE_MARKS).all():
            return None
        used = tuple(rows[part] for part in ("gpu", "cpu", "mem"))
        if nodes is not None and len(nodes) == m:
            index = nodes
        else:
            index = np.fromiter(map(self._index.get, use.keys(), repeat(-1)), np.intp, count=m)
        if int(index.min()) < 0:  # names the cluster lacks: left out
            kept = index >= 0
            used = tuple(column[kept] for column in used)
            index = index[kept]
        return index, used


def _minus(own: Vec3, used: Vec3) -> Vec3:
    """Free of ``own`` after ``used``, clamped at zero per part (as the plain table)."""
    return (
        own[0] - used[0] if own[0] > used[0] else 0,
        own[1] - used[1] if own[1] > used[1] else 0,
        own[2] - used[2] if own[2] > used[2] else 0,
    )
