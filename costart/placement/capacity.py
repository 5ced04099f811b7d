"""Capacity as the step counts it: per-node vectors of (gpu, cpu, mem_gb) and how many
tasks of a shape fit into one.

The planner, the session ledger and the speed-ups all count in these, so they live
here, apart from any of them: a plain tuple per node (not a `Capacity` struct) because
a session adds and compares thousands of them. A `CapacityView` is what one planning attempt
reads: the ledger makes them, the planner searches them.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Protocol

from costart.domain.spec_types import Shape
from costart.placement.cluster import Cluster, shape_fits_type

Vec = tuple[int, int, int]
"""(gpu, cpu, mem_gb) on one node."""
NodeVecs = dict[int, Vec]
"""Node index -> vector, for the nodes that have one."""
ZERO: Vec = (0, 0, 0)
FitCounts = list[int] | bytearray
"""Per node, how many tasks of one shape fit there. A ledger that knows no count can
pass 255 (`BYTE_COUNTS`) keeps them as a byte array: made and copied in C, one byte a
node, and not walked by the garbage collector (a list of a cluster's nodes is, reference
by reference, at every collection of the generation it sits in: ADR 0158). Readers index,
slice, sum and iterate either alike; only a list is compared equal to a list."""
BYTE_COUNTS = 255  # the largest count a byte array of `FitCounts` holds
_NO_LIMIT = 1 << 62  # a shape asking for nothing fits no count of tasks (0)


def shape_vec(shape: Shape, count: int = 1) -> Vec:
    return (shape.gpu * count, shape.cpu * count, shape.mem_gb * count)


def fit_count(avail: Vec, shape: Shape) -> int:
    """How many tasks of ``shape`` fit into ``avail`` (ignoring the GPU type)."""
    best = _NO_LIMIT
    if shape.gpu:
        best = avail[0] // shape.gpu
    if shape.cpu:
        k = avail[1] // shape.cpu
        best = k if k < best else best
    if shape.mem_gb:
        k = avail[2] // shape.mem_gb
        best = k if k < best else best
    return 0 if best == _NO_LIMIT or best < 0 else best


class FitCountTable(dict[Vec, int]):
    """Vector -> tasks of ``shape`` that fit into it (`fit_count`, GPU type ignored),
    computed once per vector: capacity is a few distinct vectors, met again and again."""

    def __init__(self, shape: Shape) -> None:
        super().__init__()
        self.shape = shape

    def __missing__(self, vec: Vec) -> int:
        count = self[vec] = fit_count(vec, self.shape)
        return count


class FitCountTables(dict[Shape, FitCountTable]):
    """Shape -> its `FitCountTable`, made on first use."""

    def __missing__(self, shape: Shape) -> FitCountTable:
        table = self[shape] = FitCountTable(shape)
        return table


def fit_counts(cluster: Cluster, base: Sequence[Vec], shape: Shape) -> list[int]:
    """`fit_count` for every node of ``base`` at once (0 on nodes of another GPU type).
    The hot loop of a session: specialised by which dimensions the shape asks for, so
    one pass does no per-node function calls. Entries of ``base`` are never negative."""
    g, c, m = shape.gpu, shape.cpu, shape.mem_gb
    if g and c and m:
        counts = [min(a // g, b // c, d // m) for a, b, d in base]
    elif g and c:
        counts = [min(a // g, b // c) for a, b, _ in base]
    elif g and m:
        counts = [min(a // g, d // m) for a, _, d in base]
    elif c and m:
        counts = [min(b // c, d // m) for _, b, d in base]
    elif g:
        counts = [a // g for a, _, _ in base]
    elif c:
        counts = [b // c for _, b, _ in base]
    elif m:
        counts = [d // m for _, _, d in base]
    else:
        return [0] * len(base)
    if shape.gpu_type is not None:
        mask = cluster.gpu_type_mask(shape.gpu_type)
        counts = [k if ok else 0 for k, ok in zip(counts, mask, strict=True)]
    return counts


def add_vecs(into: NodeVecs, node: int, vec: Vec, sign: int = 1) -> None:
    g, c, m = into.get(node, ZERO)
    into[node] = (g + sign * vec[0], c + sign * vec[1], m + sign * vec[2])


class DomainSummary(Protocol):
    """Fit counts of one shape summed per domain of the cluster's levels, kept by a
    ledger for its shared counts (`costart.placement.incremental.domain_sums`)."""

    def within(self, level: str, start: int, end: int, fits: Sequence[int]) -> dict[str, int]:
        """`CapacityView.domain_sums` over ``fits``, the counts it sums."""


class CapacityView:
    """Capacity per node that one planning attempt may use: shared base arrays plus a
    sparse overlay (a group's own holds, which it may reuse)."""

    def __init__(
        self,
        cluster: Cluster,
        base: list[Vec],
        overlay: Mapping[int, Vec],
        shared_fits: dict[Shape, FitCounts] | None = None,
        key: Hashable = None,
        fill: Callable[[Shape], FitCounts] | None = None,
        summary: Callable[[Shape], DomainSummary | None] | None = None,
        content: Callable[[CapacityView, Shape], Hashable] | None = None,
    ) -> None:
        """``fill``: computes the fit counts of ``base`` for a shape not yet in
        ``shared_fits`` (default: `fit_counts` over every node). ``summary``: the
        shared counts of a shape summed per domain, if the ledger keeps them (default:
        `domain_sums` sums the nodes). ``content``: the ledger's `content_key`, if it
        can give one (default: none)."""
        self.cluster = cluster
        self._summary = summary
        self._content = content
        self._base = base
        self._overlay = dict(overlay)
        self._shared = shared_fits if shared_fits is not None else {}
        self._fill = fill
        self._fits: dict[Shape, FitCounts] = {}
        # Equal keys mean equal capacity (the ledger's kind and version, and the
        # overlay): plans in equal views are equal, so a session can reuse them.
        # None: no such promise.
        self.key: Hashable = None if key is None else (key, tuple(sorted(self._overlay.items())))

    def avail(self, node: int) -> Vec:
        g, c, m = self._base[node]
        extra = self._overlay.get(node)
        if extra is not None:
            return (g + extra[0], c + extra[1], m + extra[2])
        return (g, c, m)

    def overlay_nodes(self) -> Sequence[int]:
        """The nodes where the view's overlay adds to its base."""
        return list(self._overlay)

    def avail_list(self) -> list[Vec]:
        """`avail` of every node (read-only; the base array itself without an overlay)."""
        if not self._overlay:
            return self._base
        out = list(self._base)
        for node in self._overlay:
            out[node] = self.avail(node)
        return out

    def fits(self, shape: Shape) -> FitCounts:
        """Tasks of ``shape`` that fit on each node (0 on nodes of another GPU type);
        read-only."""
        cached = self._fits.get(shape)
        if cached is not None:
            return cached
        nodes = self.cluster.nodes
        shared = self.shared_fits(shape)
        if not self._overlay:
            self._fits[shape] = shared
            return shared
        counts = shared[:]  # (a list, or a byte array: its own kind, copied in C)
        for node in sorted(self._overlay):
            if shape_fits_type(shape, nodes[node]):
                count = fit_count(self.avail(node), shape)
                if count > BYTE_COUNTS and isinstance(counts, bytearray):
                    counts = list(counts)  # (a count no byte holds: kept exact)
                counts[node] = count
        self._fits[shape] = counts
        return counts

    def shared_fits(self, shape: Shape) -> FitCounts:
        """`fits` of the base array alone, without the overlay (read-only: shared by
        every view of the base)."""
        shared = self._shared.get(shape)
        if shared is None:
            if self._fill is not None:
                shared = self._fill(shape)
            else:
                shared = fit_counts(self.cluster, self._base, shape)
            self._shared[shape] = shared
        return shared

    def content_key(self, shape: Shape) -> Hashable:
        """A stand-in for this view's capacity as tasks of ``shape`` read it (the fit
        counts, and the capacity of the nodes where one fits), cheaper than that
        content, from a ledger that keeps one: equal stand-ins, equal content (unequal
        ones may still have equal content). None if the ledger keeps none."""
        return None if self._content is None else self._content(self, shape)

    def domain_sums(self, level: str, start: int, end: int, shape: Shape) -> dict[str, int]:
        """Tasks of ``shape`` that fit per domain of ``level`` that has nodes in
        ``[start, end)`` (in node order), over those nodes."""
        fits = self.fits(shape)
        summary = None
        if self._summary is not None and level in self.cluster.levels:
            summary = self._summary(shape)
        if summary is None:
            runs = self.cluster.runs_within(level, start, end)
            return {domain: sum(fits[s:e]) for domain, s, e in runs}
        shared = self._shared[shape]
        sums = summary.within(level, start, end, shared)
        if self._overlay:
            # The summary sums the shared counts: the overlay's nodes count as here.
            domain_of = self.cluster.domain_ids(level)
            for node in sorted(self._overlay):
                if start <= node < end:
                    sums[domain_of[node]] += fits[node] - shared[node]
        return sums
