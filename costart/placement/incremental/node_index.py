"""Node names to node indexes, many at once, found by the names' identity (ADR 0160).

A speed-up beside the plain lookup (`plain_indexes`: each name looked up in the
cluster's index, a dict probe a name) that tests compare it with
(`tests/placement/test_node_index.py`). The cluster interns its index's names
(`Cluster`) and the World's use interns the names it keeps (`NodeUse`), so a name the
World uses and the cluster has is the very object the cluster's index holds. Its
address (CPython's `id`) then finds it in a table of the cluster's names' addresses,
made once per cluster: an open-addressing table (linear probing, at most half full)
held in two numpy arrays and probed for every name at once. The addresses are read
from an object array's buffer (no int made per name), and no string, dict slot or
index's int object is read: on a large cluster each of those is a memory miss a name,
and together they were most of a fresh step's reading of the World (ADR 0159's
`world_read`).

A name not found by its address (one not interned, or one the cluster lacks) is looked
up the plain way, so the answer is the plain lookup's whatever the names are: identity
only decides which names skip the dict.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from itertools import repeat

import numpy as np
import numpy.typing as npt

Indexes = npt.NDArray[np.intp]
Addresses = npt.NDArray[np.uint64]
# Fibonacci hashing of an address, its low 4 bits dropped (zero on CPython: objects are
# 16-byte aligned; were they not, only the spread would suffer, never an answer).
_SPREAD = np.uint64(0x9E37_79B9_7F4A_7C15)
_ALIGNMENT = np.uint64(4)


def plain_indexes(index: Mapping[str, int], names: Iterable[str], count: int) -> Indexes:
    """Each of ``names``' index in ``index`` (-1: not there), in their order; ``count``
    is how many names there are."""
    return np.fromiter(map(index.get, names, repeat(-1)), np.intp, count=count)


def _addresses(names: Iterable[str], count: int) -> Addresses:
    """Each of ``names``' address, read from an object array's buffer (the array is
    kept by the result, so each address stays its object's while the result lives)."""
    if not count:
        return np.zeros(0, np.uint64)
    objects = np.fromiter(names, dtype=object, count=count)
    pointers = memoryview(objects).cast("B")  # type: ignore[arg-type]  # (numpy exports it)
    return np.frombuffer(pointers, np.uint64)


class IdentityIndex:
    """``index`` (node name -> node index, fixed once made) read by the names' identity
    (see the module). The names are kept, so each address stays its object's."""

    def __init__(self, index: Mapping[str, int]) -> None:
        self._index = index
        self._names = list(index)
        n = len(self._names)
        self._bits = max(1, (2 * n - 1).bit_length())  # at most half full
        size = 1 << self._bits
        self._keys = np.zeros(size, np.uint64)  # an address, or 0: an empty slot
        self._values = np.full(size, -1, np.intp)
        addresses = _addresses(self._names, n)
        at = plain_indexes(index, self._names, n)
        slot = self._slots(addresses)
        todo = np.arange(n)
        while len(todo):  # every name not yet in: each tries its slot, one wins a slot
            tried = slot[todo]
            free = np.flatnonzero(self._keys[tried] == 0)
            won, first = np.unique(tried[free], return_index=True)
            winners = todo[free[first]]
            self._keys[won] = addresses[winners]
            self._values[won] = at[winners]
            left = np.ones(len(todo), dtype=np.bool_)
            left[free[first]] = False
            todo = todo[left]
            slot[todo] = (slot[todo] + 1) & (size - 1)  # the next slot (linear probing)

    @property
    def names(self) -> list[str]:
        """The index's names, in its order (the objects it holds; not to be changed)."""
        return self._names

    def _slots(self, addresses: Addresses) -> Indexes:
        spread: Addresses = (addresses >> _ALIGNMENT) * _SPREAD
        return (spread >> np.uint64(64 - self._bits)).astype(np.intp)

    def indexes(self, names: Collection[str]) -> Indexes:
        """Each of ``names``' index (-1: not in the index), in their order: equal to
        `plain_indexes` of the same names."""
        count = len(names)
        out = self.by_address(names)
        if count and int(out.min()) < 0:  # not found by address: looked up the plain way
            missed = np.flatnonzero(out < 0)
            listed = list(names)
            out[missed] = plain_indexes(
                self._index, map(listed.__getitem__, missed.tolist()), len(missed)
            )
        return out

    def by_address(self, names: Collection[str]) -> Indexes:
        """Each of ``names``' index when it is the very object the index holds, else -1
        (an equal string that is another object included)."""
        count = len(names)
        if not count or not self._names:
            return np.full(count, -1, dtype=np.intp)
        wanted = _addresses(names, count)
        keys, mask = self._keys, (1 << self._bits) - 1
        slot = self._slots(wanted)
        key = keys[slot]
        hit = key == wanted
        out: Indexes = np.where(hit, self._values[slot], -1)
        todo = np.flatnonzero(~hit & (key != 0))  # probed on past a slot of another
        while len(todo):
            tried = slot[todo] = (slot[todo] + 1) & mask
            key = keys[tried]
            hit = key == wanted[todo]
            out[todo[hit]] = self._values[tried[hit]]
            todo = todo[~hit & (key != 0)]
        return out
