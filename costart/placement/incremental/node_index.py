"""Node names to node indexes, many at once, found by the names' identity (ADR 0160).

A speed-up beside the plain lookup (`plain_indexes`: each name looked up in the
cluster's index, a dict probe a name) that tests compare it with
(`tests/placement/test_node_index.py`). The cluster interns its index's names
(`Cluster`) and the World's use interns the names it keeps (`NodeUse`), so a name the
World uses and the cluster has is the very object the cluster's index holds. Matching
object ids, sorted once per cluster, finds all of them in one vectorised search that
reads no string, no hash table slot and no index's int object: on a large cluster each
of those is a memory miss a name, and together they were most of a fresh step's
reading of the World (ADR 0159's `world_read`).

A name not found by its identity (one not interned, or one the cluster lacks) is looked
up the plain way, so the answer is the plain lookup's whatever the names are: identity
only decides which names skip the dict.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from itertools import repeat

import numpy as np
import numpy.typing as npt

Indexes = npt.NDArray[np.intp]


def plain_indexes(index: Mapping[str, int], names: Iterable[str], count: int) -> Indexes:
    """Each of ``names``' index in ``index`` (-1: not there), in their order; ``count``
    is how many names there are."""
    return np.fromiter(map(index.get, names, repeat(-1)), np.intp, count=count)


class IdentityIndex:
    """``index`` (node name -> node index, fixed once made) read by the names' identity
    (see the module). The names are kept, so each id stays its object's."""

    def __init__(self, index: Mapping[str, int]) -> None:
        self._index = index
        self._names = list(index)
        ids = np.fromiter(map(id, self._names), np.uintp, count=len(self._names))
        order = np.argsort(ids)
        self._ids = ids[order]  # sorted
        self._at = plain_indexes(index, self._names, len(self._names))[order]

    def indexes(self, names: Collection[str]) -> Indexes:
        """Each of ``names``' index (-1: not in the index), in their order: equal to
        `plain_indexes` of the same names."""
        count = len(names)
        ids = self._ids
        if not count or not len(ids):
            return plain_indexes(self._index, names, count)
        wanted = np.fromiter(map(id, names), np.uintp, count=count)
        at = np.searchsorted(ids, wanted)
        np.minimum(at, len(ids) - 1, out=at)
        found = ids[at] == wanted
        out = self._at[at]
        if not found.all():  # looked up the plain way: not the cluster's objects
            missed = np.flatnonzero(~found)
            listed = list(names)
            out[missed] = plain_indexes(
                self._index, map(listed.__getitem__, missed.tolist()), len(missed)
            )
        return out
