"""One session's capacity bookkeeping: free capacity, holds, and reservation claims.

Built at the start of a session from the allocator's free capacity and the World's
holds, and updated as the session decides, so a later group in the order sees what
earlier ones took. Three kinds of numbers per node:

* ``free``  — unused now (capacity minus every hold and placement), via the allocator;
* ``held``  — held by open reservations (per group, so a group can count its own);
* ``claim`` — what higher-ordered reservations' plans still need beyond their holds.
  Lower groups never take claimed capacity (docs/design.md §3.4 #5).

A `CapacityView` is the per-node capacity one planning attempt may use, of one `ViewKind`;
views share one base array per kind, kept current node by node as the session
changes capacity, so the many groups that fail in a busy session share them. This
ledger builds those arrays from scratch each session; the incremental step carries
them from session to session (`costart.placement.incremental.carried`).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from enum import StrEnum
from functools import partial

from costart.domain.capacity import Capacity
from costart.domain.spec_types import Shape
from costart.placement.allocator import Allocator
from costart.placement.capacity import (
    ZERO,
    CapacityView,
    DomainSummary,
    FitCounts,
    FitCountTables,
    NodeVecs,
    Vec,
    add_vecs,
    fit_counts,
)
from costart.placement.cluster import Cluster


class ViewKind(StrEnum):
    """What a view's base array offers per node (see `SessionLedger._entry`). A
    `StrEnum`: its members hash and compare as their text, in C, on the hot path."""

    FREE = "free"
    """Free capacity, claims ignored."""
    NOW = "now"
    """Free capacity outside higher-ordered claims."""
    EVENTUAL = "eventual"
    """Capacity of an up node minus every hold and higher-ordered claim: what a group
    could have once running work ends."""


# The members as module names: reading an enum class's attribute runs Python code (in
# 3.11), and the hot paths ask for them per node.
FREE, NOW, EVENTUAL = ViewKind.FREE, ViewKind.NOW, ViewKind.EVENTUAL
# The view kinds whose entry (`SessionLedger._entry`) reads free capacity, held
# capacity, claims; a change refreshes only those.
OF_FREE = (FREE, NOW)
OF_HELD = (EVENTUAL,)
OF_CLAIM = (NOW, EVENTUAL)
OF_ALL = (FREE, NOW, EVENTUAL)


class SessionLedger:
    """Free, held and claimed capacity for one scheduling session, built from scratch.

    ``free``: the allocator's `free_capacity` for this session; ``held_total`` and
    ``held_by``: what open reservations hold per node, and per group name (node ->
    vector, only nodes where it holds a task), as the World records them."""

    def __init__(
        self,
        cluster: Cluster,
        allocator: Allocator,
        free: Sequence[Capacity],
        held_total: Sequence[Vec],
        held_by: Mapping[str, NodeVecs],
    ) -> None:
        self.cluster = cluster
        self.allocator = allocator
        self.free: list[Vec] = self._vecs_of(free)
        # Claims per node, only where there are any (most sessions claim nothing: no
        # list of every node made and freed for it).
        self.claim: NodeVecs = {}
        self.held_total: list[Vec] = self._held_of(held_total)
        self.held_by: dict[str, NodeVecs] = {g: dict(h) for g, h in held_by.items()}
        # Per view kind, bumped whenever an entry of its base array changes: a view's
        # key includes its kind's, so plans memoised for a key are never reused after
        # that capacity changed, and are reused across changes it does not read (a
        # placement leaves EVENTUAL alone, a claim FREE).
        self._versions = dict.fromkeys(OF_ALL, 0)
        # A shape's count per vector met (the session's vectors are few and repeat).
        self._fit_tables = FitCountTables()
        # Views' base arrays, made on first use and then kept current node by node as
        # the session changes capacity (rebuilding 4,096-node arrays per group would
        # dominate a session); ``_touched``: the nodes changed so far.
        self._bases: dict[ViewKind, list[Vec]] = {}
        self._shared_fits: dict[ViewKind, dict[Shape, FitCounts]] = {}
        self._touched: set[int] = set()

    def _vecs_of(self, free: Sequence[Capacity]) -> list[Vec]:
        """``free`` as vectors."""
        return [(c.gpu, c.cpu, c.mem_gb) for c in free]

    def _held_of(self, held_total: Sequence[Vec]) -> list[Vec]:
        """The session's ``held_total``: its own copy of the World's."""
        return list(held_total)

    def _held_to_change(self) -> list[Vec]:
        """``held_total``, to change in place (the session's own)."""
        return self.held_total

    def _add_hold(self, group: str, node: int, vec: Vec, sign: int = 1) -> None:
        add_vecs(self.held_by.setdefault(group, {}), node, vec, sign)
        held_total = self._held_to_change()
        g, c, m = held_total[node]
        held_total[node] = (g + sign * vec[0], c + sign * vec[1], m + sign * vec[2])

    # --- changes ---------------------------------------------------------------------

    def take(self, node: int, vec: Vec, count: int = 1) -> None:
        """Take free capacity (a new hold or placement), ``count`` tasks of ``vec``: the
        allocator checks each, as taken one by one; the arrays are refreshed once."""
        if count == 1:
            self._take(node, vec, OF_FREE)
            return
        name = self.cluster.nodes[node].name
        demand = Capacity(gpu=vec[0], cpu=vec[1], mem_gb=vec[2])
        for _ in range(count):
            self.allocator.reserve(name, demand)
        g, c, m = self.free[node]
        self.free[node] = (g - count * vec[0], c - count * vec[1], m - count * vec[2])
        self._refresh(node, OF_FREE)

    def _take(self, node: int, vec: Vec, kinds: tuple[ViewKind, ...]) -> None:
        name = self.cluster.nodes[node].name
        self.allocator.reserve(name, Capacity(gpu=vec[0], cpu=vec[1], mem_gb=vec[2]))
        g, c, m = self.free[node]
        self.free[node] = (g - vec[0], c - vec[1], m - vec[2])
        self._refresh(node, kinds)

    def give(self, node: int, vec: Vec) -> None:
        """Give capacity back (released holds or placements)."""
        name = self.cluster.nodes[node].name
        self.allocator.release(name, Capacity(gpu=vec[0], cpu=vec[1], mem_gb=vec[2]))
        if self.cluster.is_up(node):
            g, c, m = self.free[node]
            self.free[node] = (g + vec[0], c + vec[1], m + vec[2])
        self._refresh(node, OF_FREE)

    def hold(self, group: str, node: int, vec: Vec) -> None:
        self._add_hold(group, node, vec)
        self._take(node, vec, OF_ALL)

    def drop_holds(self, group: str) -> NodeVecs:
        """Forget the group's holds (it converts or releases them); returns them."""
        holds = self.held_by.pop(group, {})
        held_total = self._held_to_change() if holds else self.held_total
        for node, vec in sorted(holds.items()):
            g, c, m = held_total[node]
            held_total[node] = (g - vec[0], c - vec[1], m - vec[2])
            self._refresh(node, OF_HELD)
        return holds

    def can_take(self, node: int, vec: Vec) -> bool:
        """Is ``vec`` free on the node outside every higher-ordered claim?"""
        f, k = self.free[node], self.claim.get(node, ZERO)
        return f[0] - k[0] >= vec[0] and f[1] - k[1] >= vec[1] and f[2] - k[2] >= vec[2]

    def add_claim(self, node: int, vec: Vec, count: int = 1, by: NodeVecs | None = None) -> None:
        """Claim ``count`` times ``vec`` on the node (one refresh for all of them);
        ``by``: the claiming group's own claims, kept for lending (`costart.placement.backfill`)."""
        if by is not None:
            add_vecs(by, node, (count * vec[0], count * vec[1], count * vec[2]))
        g, c, m = self.claim.get(node, ZERO)
        self.claim[node] = (g + count * vec[0], c + count * vec[1], m + count * vec[2])
        self._refresh(node, OF_CLAIM)

    def hold_or_claim(
        self, group: str, nodes: Sequence[int], vec: Vec, claims_by: NodeVecs | None = None
    ) -> tuple[list[int], int]:
        """Task by task, hold ``vec`` on each of ``nodes`` if it `can_take` it, else claim
        it; returns the nodes held (in order) and the number of tasks claimed.

        A claim only lowers what `can_take` sees on its node, so once a task is claimed
        on a node every later one there is too: the claims are added after the loop,
        one per node, instead of refreshing the arrays task by task."""
        fresh: list[int] = []
        claims: dict[int, int] = {}  # node -> tasks claimed there
        for node in nodes:
            if node not in claims and self.can_take(node, vec):
                self.hold(group, node, vec)
                fresh.append(node)
            else:
                claims[node] = claims.get(node, 0) + 1
        for node, count in claims.items():
            self.add_claim(node, vec, count, claims_by)
        return fresh, sum(claims.values())

    def drop_hold(self, group: str, node: int, vec: Vec) -> None:
        """One held task of ``group`` on the node is given up (lent): its capacity is
        free again, for whoever the caller lets take it."""
        self._add_hold(group, node, vec, -1)
        if not any(self.held_by[group].get(node, ZERO)):
            del self.held_by[group][node]
        self.give(node, vec)
        self._refresh(node, OF_HELD)

    # --- views -----------------------------------------------------------------------

    def version(self) -> tuple[int, ...]:
        """Moves whenever any view's capacity may have (every kind's version): equal
        versions within a session, equal views for every group without holds."""
        return tuple(self._versions.values())

    def _entry(self, kind: ViewKind, i: int) -> Vec:
        f = self.free[i]
        if kind is FREE:
            return f
        k = self.claim.get(i, ZERO)
        if kind is NOW:
            return (max(0, f[0] - k[0]), max(0, f[1] - k[1]), max(0, f[2] - k[2]))
        if not self.cluster.is_up(i):
            return ZERO
        node, h = self.cluster.nodes[i], self.held_total[i]
        return (
            max(0, node.gpu - h[0] - k[0]),
            max(0, node.cpu - h[1] - k[1]),
            max(0, node.mem_gb - h[2] - k[2]),
        )

    def _base(self, kind: ViewKind) -> list[Vec]:
        """``kind``'s base array: every node's `_entry` as of now, kept current."""
        base = self._bases.get(kind)
        if base is None:
            base = self._bases[kind] = [self._entry(kind, i) for i in range(len(self.cluster))]
            self._shared_fits[kind] = {}
        return base

    def _fits_of(self, kind: ViewKind, shape: Shape) -> FitCounts:
        """The fit counts of ``kind``'s base array (as in this session) for ``shape``."""
        return fit_counts(self.cluster, self._bases[kind], shape)

    def _refresh(self, i: int, kinds: tuple[ViewKind, ...]) -> None:
        """Recompute node ``i`` in the base arrays of ``kinds`` (those whose entry reads
        what changed, see `_entry`) and their cached fit counts."""
        self._touched.add(i)
        gpu_type = self.cluster.nodes[i].gpu_type
        bases = self._bases
        for kind in kinds:
            base = bases.get(kind)
            if base is None:
                continue  # built later, from the entries then (no view of it yet)
            vec = self._entry(kind, i)
            if vec == base[i]:
                continue  # its fit counts read only the entry (and the node's type)
            self._versions[kind] += 1
            base[i] = vec
            self._refresh_counts(kind, i, vec, gpu_type)

    def _refresh_counts(self, kind: ViewKind, i: int, vec: Vec, gpu_type: str | None) -> None:
        """Node ``i``'s entry of ``kind`` moved to ``vec``: its shared fit counts."""
        tables = self._fit_tables
        for shape, fits in self._shared_fits[kind].items():
            typed = shape.gpu_type  # `shape_fits_type`, inline
            fits[i] = tables[shape][vec] if typed is None or typed == gpu_type else 0

    def _summaries(self, kind: ViewKind) -> Callable[[Shape], DomainSummary | None] | None:
        """Where ``kind``'s views find their shared fit counts summed per domain: none
        kept here (a view sums the nodes when asked)."""
        return None

    def _contents(self, kind: ViewKind) -> Callable[[CapacityView, Shape], Hashable] | None:
        """Where ``kind``'s views find a stand-in for their content
        (`CapacityView.content_key`): none kept here."""
        return None

    def _view(self, kind: ViewKind, overlay: Mapping[int, Vec]) -> CapacityView:
        base = self._base(kind)
        return CapacityView(
            self.cluster,
            base,
            overlay,
            self._shared_fits[kind],
            (kind, self._versions[kind]),
            partial(self._fits_of, kind),
            self._summaries(kind),
            self._contents(kind),
        )

    def now_view(self, group: str | None, *, honour_claims: bool = True) -> CapacityView:
        """Free now (minus higher claims), plus the group's own holds. Like every view,
        valid until the ledger next changes."""
        overlay = self.held_by.get(group, {}) if group else {}
        return self._view(NOW if honour_claims else FREE, overlay)

    def now_view_with(self, group: str, avail: Mapping[int, Vec]) -> CapacityView:
        """`now_view` of ``group``, except that the nodes of ``avail`` offer that much
        (before the group's own holds) instead of their free capacity outside claims:
        what a borrower, or a reservation taking back what it lent, may use."""
        base = self._base(NOW)
        overlay = dict(self.held_by.get(group, {}))
        for node, vec in sorted(avail.items()):
            b = base[node]
            add_vecs(overlay, node, (vec[0] - b[0], vec[1] - b[1], vec[2] - b[2]))
        return self._view(NOW, overlay)

    def eventual_view(self, group: str, lower_holds: NodeVecs | None = None) -> CapacityView:
        """What the group could have once running work ends: capacity of up nodes minus
        other reservations' holds and higher claims; ``lower_holds`` are added back when
        the group may displace lower-ordered reservations."""
        overlay = dict(self.held_by.get(group, {}))
        for index, vec in sorted((lower_holds or {}).items()):
            add_vecs(overlay, index, vec)
        return self._view(EVENTUAL, overlay)


def empty_cluster_view(cluster: Cluster) -> CapacityView:
    """Every node's full capacity, whatever its status (for the check at submit)."""
    return CapacityView(cluster, [(n.gpu, n.cpu, n.mem_gb) for n in cluster.nodes], {})


def empty_up_view(cluster: Cluster) -> CapacityView:
    """The up nodes, empty: can the group fit the cluster as it is now, ever?"""
    return CapacityView(
        cluster,
        [
            (n.gpu, n.cpu, n.mem_gb) if cluster.is_up(i) else ZERO
            for i, n in enumerate(cluster.nodes)
        ],
        {},
    )
