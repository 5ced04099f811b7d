"""A `CapacityProfile` that answers capacity-in-time reads of every node at once.

The shadow planner asks `free_over` of every node for each candidate start of each
group it plans: the plain profile walks each node's step function in Python, thousands
of nodes per read. `IndexedProfile` keeps every node's step function in arrays, one
row per node (start of each step, start of the next, its use; rows padded with steps
that are never active), refreshes only the rows of nodes whose uses changed, and reads
the largest use over ``[start, end)`` of all nodes as one vectorised maximum. It also
says when a gang surely cannot fit (`cannot_fit`), before the planner searches:
every member needs its tasks' worth of slots where its shape fits, and the gang its
whole vector within the total free, so the search is skipped only where it would fail.

Every answer equals the plain profile's (tests compare the two on random profiles);
the arrays are a cache of the uses, which stay the one truth. Pure: no clock, nodes
refreshed in ascending order.
"""

from __future__ import annotations

from bisect import bisect_right
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from operator import itemgetter
from typing import TYPE_CHECKING, Final

import numpy as np
import numpy.typing as npt

from costart.placement.capacity import CapacityView, Vec
from costart.placement.cluster import Cluster
from costart.placement.shadow.profile import CapacityProfile, Use
from costart.placement.shadow.step_maxima import Coverage, StepMaxima

if TYPE_CHECKING:
    from costart.domain.spec_types import Shape
    from costart.placement.planner import Demand

Ints = npt.NDArray[np.int64]

NEVER: Final = np.iinfo(np.int64).max
"""A padded step's start (and the last step's next start): after every time."""
BEFORE: Final = np.iinfo(np.int64).min
"""A padded step's next start: before every time, so the step is never active."""


@dataclass
class IndexedProfile(CapacityProfile):
    """`CapacityProfile` with every node's use over time held in arrays (see the
    module). ``reads``: how reads were answered, by path (tests print it)."""

    _cap: Ints = field(init=False, repr=False)
    _starts: Ints = field(init=False, repr=False)
    _nexts: Ints = field(init=False, repr=False)
    _levels: Ints = field(init=False, repr=False)
    _rows: dict[tuple[tuple[int, ...], tuple[Vec, ...]], int] = field(init=False, repr=False)
    _row_of: Ints = field(init=False, repr=False)
    _dirty: set[int] = field(init=False, repr=False)
    _owned: dict[str, set[int]] = field(init=False, repr=False)
    reads: dict[str, int] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        super().__post_init__()
        n = len(self.capacity)
        self._cap = np.array(self.capacity, dtype=np.int64).reshape(n, 3).T.copy()
        # One row per distinct step function (nodes alike share one: a cluster has
        # few timelines), row 0 the empty one; each node points at its row.
        self._starts = np.full((8, 1), NEVER, dtype=np.int64)
        # The empty timeline uses nothing from before every time (a range maximum reads
        # one step at least); its next start stays BEFORE, so `_free` never reads it.
        self._starts[0, 0] = BEFORE
        self._times = np.array([BEFORE, NEVER], dtype=np.int64)  # every row's step starts
        self._nexts = np.full((8, 1), BEFORE, dtype=np.int64)
        self._levels = np.zeros((3, 8, 1), dtype=np.int64)
        self._maxima = StepMaxima(8, 1)
        self._new_rows: list[int] = []
        self._rows = {((), ()): 0}
        # The row of each list of uses seen (vector, start, end of each, in order): nodes
        # a gang spans have the same, and their step function is made once.
        self._row_by_uses: dict[tuple[tuple[Vec, int, int | None], ...], int] = {(): 0}
        self._row_of = np.zeros(n, dtype=np.int64)
        # Nodes of equal capacity are one kind (a cluster has few).
        self._kinds, kind_of = np.unique(self._cap, axis=1, return_inverse=True)
        self._kind_of: Ints = kind_of.reshape(n).astype(np.int64)
        self._classes_kept: tuple[Ints, Ints, Ints, Ints] | None = None
        self._coverage: Coverage | None = None  # of the classes' timelines, kept with them
        self._spread: Callable[[list[Vec]], list[Vec]] | None = None  # classes to nodes, too
        self._last: tuple[tuple[int, int | None, str | None], Ints] | None = None
        self._dirty = {node for node, us in enumerate(self.uses) if us}
        self._owned = {}
        # How many uses end at each time (counted in one pass).
        self._ends: Counter[int] = Counter(
            u.end_ns for us in self.uses for u in us if u.end_ns is not None
        )
        self._release_times: list[int] | None = None
        for node, node_uses in enumerate(self.uses):
            for owner in {u.owner for u in node_uses}:
                self._owned.setdefault(owner, set()).add(node)
        self.reads = {"indexed": 0, "plain": 0, "ruled-out": 0, "batched": 0}

    @classmethod
    def of(cls, profile: CapacityProfile) -> IndexedProfile:
        """An indexed copy of ``profile`` (its uses copied, not shared)."""
        return cls(list(profile.capacity), profile.now_ns, [list(u) for u in profile.uses])

    def copy(self) -> IndexedProfile:
        return IndexedProfile.of(self)

    def _changed(self, node: int) -> None:
        super()._changed(node)
        self._dirty.add(node)
        self._last = None

    def add(self, use: Use) -> None:
        before = len(self.uses[use.node])
        super().add(use)
        if len(self.uses[use.node]) != before:
            self._owned.setdefault(use.owner, set()).add(use.node)
            self._count_end(self.uses[use.node][-1].end_ns, 1)

    def add_all(self, uses: Iterable[Use]) -> None:
        added = self._append_all(uses)
        for use in added:
            self._owned.setdefault(use.owner, set()).add(use.node)
            self._count_end(use.end_ns, 1)
        for node in sorted({u.node for u in added}):
            self._changed(node)

    def _count_end(self, end_ns: int | None, sign: int) -> None:
        if end_ns is None:
            return
        self._ends[end_ns] += sign
        if not self._ends[end_ns]:
            del self._ends[end_ns]
        self._release_times = None

    def remove(self, owner: str) -> bool:
        nodes = self._owned.pop(owner, set())
        found = False
        for node in sorted(nodes):
            for use in self.uses[node]:
                if use.owner == owner:
                    self._count_end(use.end_ns, -1)
            self.uses[node] = [u for u in self.uses[node] if u.owner != owner]
            self._changed(node)
            found = True
        return found

    def held(self, owner: str) -> list[Use]:
        nodes = sorted(self._owned.get(owner, ()))
        return [u for n in nodes for u in self.uses[n] if u.owner == owner and u.end_ns is None]

    def releases(self, until_ns: int) -> list[int]:
        if self._release_times is None:
            self._release_times = sorted({self.now_ns} | self._ends.keys())
        return self._release_times[: bisect_right(self._release_times, until_ns)]

    def _refresh(self) -> None:
        """Point the nodes whose uses changed since the last read at the row of their
        new step function (a new row the first time one is seen)."""
        if not self._dirty:
            return
        for node in sorted(self._dirty):
            uses = tuple((u.vec, u.start_ns, u.end_ns) for u in self.uses[node])
            row = self._row_by_uses.get(uses)
            if row is None:
                times, levels = self._steps_of(node)
                key = (tuple(times), tuple(levels))
                row = self._rows.get(key)
                if row is None:
                    row = self._rows[key] = self._new_row(times, levels)
                self._row_by_uses[uses] = row
            self._row_of[node] = row
        self._dirty.clear()
        self._classes_kept = self._coverage = self._spread = None
        if self._new_rows:
            new = np.array(self._new_rows, dtype=np.int64)
            self._maxima.set_rows(new, self._levels[:, new])
            self._times = np.union1d(self._times, self._starts[new])
            self._new_rows.clear()

    def _new_row(self, times: list[int], levels: list[Vec]) -> int:
        row, k = len(self._rows), len(times)
        rows, width = self._starts.shape
        if row == rows or k > width:
            self._grow(2 * rows if row == rows else rows, max(k, 2 * width) if k > width else width)
        if k:  # a timeline without uses is only padding: nothing used
            self._starts[row, :k] = times
            self._nexts[row, : k - 1] = times[1:]
            self._nexts[row, k - 1] = NEVER
            self._levels[:, row, :k] = np.array(levels, dtype=np.int64).T
            self._new_rows.append(row)
        return row

    def _grow(self, rows: int, width: int) -> None:
        """Room for ``rows`` timelines of ``width`` steps (new room is padding)."""
        old_rows, old_width = self._starts.shape
        starts = np.full((rows, width), NEVER, dtype=np.int64)
        nexts = np.full((rows, width), BEFORE, dtype=np.int64)
        levels = np.zeros((3, rows, width), dtype=np.int64)
        starts[:old_rows, :old_width] = self._starts
        nexts[:old_rows, :old_width] = self._nexts
        levels[:, :old_rows, :old_width] = self._levels
        self._starts, self._nexts, self._levels = starts, nexts, levels
        self._maxima = self._maxima.resized(rows, width, levels)

    def _free(self, start_ns: int, end_ns: int | None, ignore: str | None) -> Ints:
        """Free capacity of every node over ``[start_ns, end_ns)`` (``start_ns`` not
        before now), not counting ``ignore``'s uses: a (3, n) array, not to be changed
        (the last one is kept: the planner reads a time to rule out, then to search)."""
        self._refresh()
        asked = (start_ns, end_ns, ignore)
        if self._last is not None and self._last[0] == asked:
            return self._last[1]
        # A step is active if it covers the start, or starts within the span.
        used = len(self._rows)
        active = self._nexts[:used] > start_ns
        if end_ns is not None:
            active &= self._starts[:used] < max(end_ns, start_ns + 1)
        peak = np.max(self._levels[:, :used], axis=2, where=active[None], initial=0)
        free: Ints = np.maximum(self._cap - peak[:, self._row_of], 0)
        if ignore is not None:
            for node in sorted(self._owned.get(ignore, ())):
                free[:, node] = self.free_on(node, start_ns, end_ns, ignore)
        self._last = (asked, free)
        return free

    def free_over(self, start_ns: int, end_ns: int | None, ignore: str | None = None) -> list[Vec]:
        if start_ns < self.now_ns:
            self.reads["plain"] += 1
            return super().free_over(start_ns, end_ns, ignore)
        self.reads["indexed"] += 1
        return _vecs(self._free(start_ns, end_ns, ignore))

    def view(
        self, cluster: Cluster, start_ns: int, end_ns: int | None, ignore: str | None
    ) -> CapacityView:
        if start_ns < self.now_ns:
            return super().view(cluster, start_ns, end_ns, ignore)
        self.reads["indexed"] += 1
        # Per class of nodes, then per node (nodes of a class share one tuple); the
        # nodes where ``ignore``'s uses lie read the plain way, as `_free`.
        by_class = self._free_by_class([start_ns], [end_ns])[:, 0]
        class_of = self._classes()[3]
        if self._spread is None:
            self._spread = _spreader(class_of.tolist())
        base = self._spread(_vecs(by_class))
        own = sorted(self._owned.get(ignore, ())) if ignore is not None else []
        for node in own:
            base[node] = self.free_on(node, start_ns, end_ns, ignore)

        def fill(shape: Shape) -> list[int]:
            # Per class, then per node (the group's own nodes from their own capacity).
            counts: Ints = _fit_counts_array(by_class, shape)[class_of]
            for node in own:
                counts[node] = _fit_counts_array(np.array(base[node])[:, None], shape)[0]
            if shape.gpu_type is not None:
                counts[~np.array(cluster.gpu_type_mask(shape.gpu_type), dtype=bool)] = 0
            fits: list[int] = counts.tolist()
            return fits

        return CapacityView(cluster, base, {}, fill=fill)

    def cannot_fit(
        self, demands: Sequence[Demand], start_ns: int, end_ns: int | None, ignore: str | None
    ) -> bool:
        if start_ns < self.now_ns:
            return False
        free = self._free(start_ns, end_ns, ignore)
        total = [0, 0, 0]
        for demand in demands:
            if demand.fixed or demand.need <= 0:
                continue  # held tasks count first: what is left to place is not plain
            shape = demand.shape
            total[0] += shape.gpu * demand.need
            total[1] += shape.cpu * demand.need
            total[2] += shape.mem_gb * demand.need
            if int(_fit_counts_array(free, shape).sum()) < demand.need:
                self.reads["ruled-out"] += 1
                return True
        whole = free.sum(axis=1).tolist()
        if any(t > w for t, w in zip(total, whole, strict=True)):
            self.reads["ruled-out"] += 1
            return True
        return False

    def ruled_out(
        self,
        demands: Sequence[Demand],
        starts: Sequence[int],
        runtime_ns: int | None,
        ignore: str | None,
    ) -> list[bool]:
        """`cannot_fit` at every start at once: free capacity of every node at every
        start as one (3, starts, nodes) array. Where ``ignore`` has uses (read the plain
        way) or a start is before now, one start at a time."""
        if not starts or ignore in self._owned or min(starts) < self.now_ns:
            return super().ruled_out(demands, starts, runtime_ns, ignore)
        self._refresh()
        self.reads["batched"] += 1
        ends = [None if runtime_ns is None else s + runtime_ns for s in starts]
        free = self._free_by_class(starts, ends)
        counts = self._classes()[2]
        out = np.zeros(len(starts), dtype=bool)
        gpu = cpu = mem = 0
        for demand in demands:
            if demand.fixed or demand.need <= 0:
                continue  # as `cannot_fit`
            shape, need = demand.shape, demand.need
            gpu, cpu, mem = (
                gpu + shape.gpu * need,
                cpu + shape.cpu * need,
                mem + shape.mem_gb * need,
            )
            out |= _fit_counts_array(free, shape) @ counts < need
        total = np.array([gpu, cpu, mem], dtype=np.int64)
        out |= (total[:, None] > free @ counts).any(axis=0)
        self.reads["ruled-out"] += int(out.sum())
        return [bool(x) for x in out]

    def _free_by_class(self, starts: Sequence[int], ends: Sequence[int | None]) -> Ints:
        """Free capacity of each class of nodes (`_classes`) over each span
        ``[starts[i], ends[i])`` (all from now on; ``ignore`` not handled): (3, spans,
        classes), as `_free` reads it per node, the largest use of each class's timeline
        over a span read as a range maximum (`StepMaxima`)."""
        self._refresh()
        kinds, rows, _, _ = self._classes()
        if self._coverage is None:
            # Only the steps some class's timeline has (the rest of the width is padding).
            width = int((self._starts[rows] != NEVER).sum(axis=1).max(initial=1))
            self._coverage = Coverage(self._starts[rows, :width], self._times)
        begins = np.array(starts, dtype=np.int64)
        # As `_free`: steps starting before the end (at least start + 1) are covered;
        # no end: every step from the start on (padding starts at NEVER: never covered).
        until = np.array(
            [
                NEVER if e is None else min(max(e, s + 1), NEVER)
                for s, e in zip(starts, ends, strict=True)
            ],
            dtype=np.int64,
        )
        lo, hi = self._coverage.spans(begins, until)
        free = self._maxima.peaks(rows, lo, hi)  # a new array: made the free in place
        np.subtract(kinds[:, None, :], free, out=free)
        np.maximum(free, 0, out=free)
        return free

    def _classes(self) -> tuple[Ints, Ints, Ints, Ints]:
        """The nodes grouped by (capacity, timeline): each class's capacity (3, k), its
        row and how many nodes it has, in ascending (capacity kind, row) order, and each
        node's class. Kept until a node's timeline changes."""
        if self._classes_kept is None:
            span = int(self._row_of.max(initial=0)) + 1
            # `np.unique` of the keys by counting (they are small): no sort.
            key_of = self._kind_of * span + self._row_of
            of_key = np.bincount(key_of)
            keys = np.flatnonzero(of_key)
            counts = of_key[keys]
            number = np.zeros(len(of_key), dtype=np.int64)
            number[keys] = np.arange(len(keys), dtype=np.int64)
            class_of = number[key_of]
            self._classes_kept = (
                self._kinds[:, keys // span],
                keys % span,
                counts,
                class_of.reshape(-1),
            )
        return self._classes_kept


def _fit_counts_array(free: Ints, shape: Shape) -> Ints:
    """Tasks of ``shape`` that fit in each column of ``free``, (3, ...) (`fit_counts`,
    vectorised, whatever the GPU type)."""
    counts: Ints | None = None
    for dim, amount in enumerate((shape.gpu, shape.cpu, shape.mem_gb)):
        if amount:
            k = free[dim] // amount
            counts = k if counts is None else np.minimum(counts, k)
    if counts is None:
        return np.zeros(free.shape[1:], dtype=np.int64)
    return counts


def _spreader(class_of: list[int]) -> Callable[[list[Vec]], list[Vec]]:
    """Each node's vector from its class's, as a function of the classes' vectors
    (``itemgetter`` gathers in C; with one index it returns the item, not a tuple)."""
    if len(class_of) < 2:
        return lambda vecs: [vecs[k] for k in class_of]
    gather = itemgetter(*class_of)
    return lambda vecs: list(gather(vecs))


def _vecs(free: Ints) -> list[Vec]:
    g, c, m = free.tolist()
    return list(zip(g, c, m, strict=True))
