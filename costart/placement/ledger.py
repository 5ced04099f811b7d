"""One session's capacity bookkeeping: free capacity, holds, and reservation claims.

Built from the allocator at the start of `decide` and updated as the session decides, so
a later group in the order sees what earlier ones took. Three kinds of numbers per node:

* ``free``  — unused now (capacity minus every hold and placement), via the allocator;
* ``held``  — held by open reservations (per group, so a group can count its own);
* ``claim`` — what higher-ordered reservations' plans still need beyond their holds.
  Lower groups never take claimed capacity (DESIGN §3.4 #5).

A `View` is the per-node capacity one planning attempt may use; views are cached per
ledger version, so the many groups that fail in a busy session share them.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from functools import partial
from itertools import compress
from operator import is_not, ne

from costart.domain.invariants import Capacity
from costart.domain.spec_types import Shape
from costart.domain.world import World
from costart.placement.allocator import Allocator
from costart.placement.cluster import Cluster, shape_fits_type
from costart.placement.usage import WorldUsage

Vec = tuple[int, int, int]
_NO_LIMIT = 1 << 62  # a shape asking for nothing fits no count of tasks (0)
NodeVecs = dict[int, Vec]
MAX_SHARED_VECS = 4096
MAX_CARRIED_SHAPES = 256
# The view kinds whose entry (`SessionLedger._entry`) reads free capacity, held
# capacity, claims; a change refreshes only those.
_OF_FREE = ("free", "now")
_OF_HELD = ("eventual",)
_OF_CLAIM = ("now", "eventual")
_OF_ALL = ("free", "now", "eventual")


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
    g, c, m = into.get(node, (0, 0, 0))
    into[node] = (g + sign * vec[0], c + sign * vec[1], m + sign * vec[2])


class View:
    """Capacity per node that one planning attempt may use: shared base arrays plus a
    sparse overlay (a group's own holds, which it may reuse)."""

    def __init__(
        self,
        cluster: Cluster,
        base: list[Vec],
        overlay: Mapping[int, Vec],
        shared_fits: dict[Shape, list[int]] | None = None,
        key: Hashable = None,
        fill: Callable[[Shape], list[int]] | None = None,
    ) -> None:
        """``fill``: computes the fit counts of ``base`` for a shape not yet in
        ``shared_fits`` (default: `fit_counts` over every node)."""
        self.cluster = cluster
        self._base = base
        self._overlay = dict(overlay)
        self._shared = shared_fits if shared_fits is not None else {}
        self._fill = fill
        self._fits: dict[Shape, list[int]] = {}
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

    def avail_list(self) -> list[Vec]:
        """`avail` of every node (read-only; the base array itself without an overlay)."""
        if not self._overlay:
            return self._base
        out = list(self._base)
        for node in self._overlay:
            out[node] = self.avail(node)
        return out

    def fits(self, shape: Shape) -> list[int]:
        """Tasks of ``shape`` that fit on each node (0 on nodes of another GPU type)."""
        cached = self._fits.get(shape)
        if cached is not None:
            return cached
        nodes = self.cluster.nodes
        shared = self._shared.get(shape)
        if shared is None:
            if self._fill is not None:
                shared = self._fill(shape)
            else:
                shared = fit_counts(self.cluster, self._base, shape)
            self._shared[shape] = shared
        if not self._overlay:
            self._fits[shape] = shared
            return shared
        counts = list(shared)
        for node in sorted(self._overlay):
            if shape_fits_type(shape, nodes[node]):
                counts[node] = fit_count(self.avail(node), shape)
        self._fits[shape] = counts
        return counts


class _VecOf(dict[Capacity, Vec]):
    """Capacity -> vector, equal capacities sharing one tuple (a C-level lookup)."""

    def __missing__(self, capacity: Capacity) -> Vec:
        vec = self[capacity] = (capacity.gpu, capacity.cpu, capacity.mem_gb)
        return vec


class StartCache:
    """The views' base arrays and fit counts as they were at the start of the last
    session, carried into the next by whoever runs the sessions (the step).

    At a session's start no claim exists yet, so a node's entry in every base array
    depends only on its free capacity, its held capacity and its status (and the
    node's fixed capacity and type). A session starts from the carried arrays and
    recomputes only the nodes where one of those changed, instead of every node for
    every view kind and shape. Equal inputs, equal entries: the arrays equal those
    built from scratch."""

    def __init__(self) -> None:
        self.vecs = _VecOf()
        self.free: list[Vec] = []  # the inputs as of the last session's start
        self.held: list[Vec] = []
        self.status: list[str] = []
        self.bases: dict[str, list[Vec]] = {}
        self.fits: dict[str, dict[Shape, list[int]]] = {}

    def forget(self) -> None:
        """Drop the carried arrays (another cluster size): they are rebuilt on use."""
        self.free, self.held, self.status = [], [], []
        self.bases, self.fits = {}, {}


class SessionLedger:
    """Free, held and claimed capacity for one scheduling session."""

    def __init__(
        self,
        cluster: Cluster,
        allocator: Allocator,
        world: World,
        usage: WorldUsage,
        start: StartCache | None = None,
        free: Sequence[Capacity] | None = None,
        moved: set[int] | None = None,
    ) -> None:
        """``usage``: the holds of ``world``, already synced to it. ``start``: the base
        arrays as of the previous session's start, carried across sessions (and
        brought up to this one here); None: build everything from scratch. ``free``:
        the allocator's `free_capacity` if the session already asked for it.
        ``moved``: a superset of the nodes whose free capacity, held capacity or status
        changed since ``start`` was last brought up to date (the in-memory allocator's
        `take_moved`, taken after the call that answered ``free``); None: unknown,
        every node is compared."""
        self.cluster = cluster
        self.allocator = allocator
        start = StartCache() if start is None else start
        if len(start.vecs) > MAX_SHARED_VECS:
            start.vecs.clear()
        # Equal capacities share one tuple (most nodes are alike): fewer objects for the
        # garbage collector to track in a session over thousands of nodes.
        if free is None:
            free = allocator.free_capacity(world)
            moved = None  # taken before this answer: says nothing about it
        n = len(cluster)
        if len(start.free) != n:
            start.forget()
            moved = None
        candidates = None if moved is None else sorted(moved)
        if candidates is None:
            self.free: list[Vec] = list(map(start.vecs.__getitem__, free))
        else:
            # Elsewhere free capacity equals the carried start's: mapping every node's
            # `Capacity` would cost a hash per node.
            self.free = list(start.free)
            vecs = start.vecs
            for i in candidates:
                self.free[i] = vecs[free[i]]
        self.claim: list[Vec] = [(0, 0, 0)] * len(cluster)
        self.held_total: list[Vec] = list(usage.held_total)
        self.held_by: dict[str, NodeVecs] = {g: dict(h) for g, h in usage.held_by.items()}
        # Bumped on every change: a view's key includes it, so plans memoised for a key
        # are never reused after capacity changed.
        self.version = 0
        self._claimed = False
        # Views' base arrays, taken from `start` on first use and then kept current node
        # by node as the session changes capacity (rebuilding 4,096-node arrays per
        # group would dominate a session); ``_touched``: the nodes changed so far.
        self._bases: dict[str, list[Vec]] = {}
        self._shared_fits: dict[str, dict[Shape, list[int]]] = {}
        self._touched: set[int] = set()
        self._start = start
        self._bring_up_to_date(start, candidates)

    def _bring_up_to_date(self, start: StartCache, candidates: list[int] | None) -> None:
        """Recompute the carried arrays on the nodes whose inputs changed since (among
        ``candidates``, the moved nodes in order, if known)."""
        n, status = len(self.cluster), self.cluster.status
        # Unchanged entries are usually the same objects (shared vectors, the usage's
        # own tuples): compared by identity, an equal copy only counts as changed.
        if candidates is not None:
            order = self._moved_inputs(start, candidates)
        else:
            changed: set[int] = set()
            if self.free != start.free:
                changed.update(compress(range(n), map(is_not, self.free, start.free)))
            if self.held_total != start.held:
                changed.update(compress(range(n), map(is_not, self.held_total, start.held)))
            if status != start.status:
                changed.update(compress(range(n), map(ne, status, start.status)))
            start.free = list(self.free)
            start.held = list(self.held_total)
            start.status = list(status)
            order = sorted(changed)
        if not order:
            return
        nodes = self.cluster.nodes
        for kind, base in start.bases.items():
            carried = start.fits[kind].items()
            for i in order:
                vec = self._entry(kind, i)  # no claims yet: the start entry
                if vec == base[i]:
                    # Fit counts read only the entry (and the node's type): unchanged.
                    # Free capacity moves without held capacity and back, so one kind
                    # of entry often stays.
                    continue
                base[i] = vec
                gpu_type = nodes[i].gpu_type
                for shape, fits in carried:
                    typed = shape.gpu_type  # `shape_fits_type`, inline
                    fits[i] = fit_count(vec, shape) if typed is None or typed == gpu_type else 0

    def _moved_inputs(self, start: StartCache, candidates: list[int]) -> list[int]:
        """The ``candidates`` whose inputs differ from ``start``'s (compared as the whole
        comparison does), with ``start``'s inputs updated there. Every other node's
        inputs are unchanged since: equal, the carried entries stay right."""
        free, held, status = self.free, self.held_total, self.cluster.status
        start_free, start_held, start_status = start.free, start.held, start.status
        order: list[int] = []
        for i in candidates:
            if (
                free[i] is not start_free[i]
                or held[i] is not start_held[i]
                or status[i] != start_status[i]
            ):
                order.append(i)
                start_free[i], start_held[i], start_status[i] = free[i], held[i], status[i]
        return order

    def _add_hold(self, group: str, node: int, vec: Vec, sign: int = 1) -> None:
        add_vecs(self.held_by.setdefault(group, {}), node, vec, sign)
        g, c, m = self.held_total[node]
        self.held_total[node] = (g + sign * vec[0], c + sign * vec[1], m + sign * vec[2])

    # --- changes ---------------------------------------------------------------------

    def take(self, node: int, vec: Vec) -> None:
        """Take free capacity (a new hold or placement); the allocator checks it."""
        self._take(node, vec, _OF_FREE)

    def _take(self, node: int, vec: Vec, kinds: tuple[str, ...]) -> None:
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
        self._refresh(node, _OF_FREE)

    def hold(self, group: str, node: int, vec: Vec) -> None:
        self._add_hold(group, node, vec)
        self._take(node, vec, _OF_ALL)

    def drop_holds(self, group: str) -> NodeVecs:
        """Forget the group's holds (it converts or releases them); returns them."""
        holds = self.held_by.pop(group, {})
        for node, vec in sorted(holds.items()):
            g, c, m = self.held_total[node]
            self.held_total[node] = (g - vec[0], c - vec[1], m - vec[2])
            self._refresh(node, _OF_HELD)
        return holds

    def can_take(self, node: int, vec: Vec) -> bool:
        """Is ``vec`` free on the node outside every higher-ordered claim?"""
        f, k = self.free[node], self.claim[node]
        return f[0] - k[0] >= vec[0] and f[1] - k[1] >= vec[1] and f[2] - k[2] >= vec[2]

    def add_claim(self, node: int, vec: Vec, count: int = 1, by: NodeVecs | None = None) -> None:
        """Claim ``count`` times ``vec`` on the node (one refresh for all of them);
        ``by``: the claiming group's own claims, kept for lending (`costart.placement.backfill`)."""
        if by is not None:
            add_vecs(by, node, (count * vec[0], count * vec[1], count * vec[2]))
        self._claimed = True
        g, c, m = self.claim[node]
        self.claim[node] = (g + count * vec[0], c + count * vec[1], m + count * vec[2])
        self._refresh(node, _OF_CLAIM)

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
        if not any(self.held_by[group].get(node, (0, 0, 0))):
            del self.held_by[group][node]
        self.give(node, vec)
        self._refresh(node, _OF_HELD)

    # --- views -----------------------------------------------------------------------

    def _entry(self, kind: str, i: int) -> Vec:
        f = self.free[i]
        if kind == "free":
            return f
        k = self.claim[i]
        if kind == "now":
            return (max(0, f[0] - k[0]), max(0, f[1] - k[1]), max(0, f[2] - k[2]))
        if not self.cluster.is_up(i):
            return (0, 0, 0)
        node, h = self.cluster.nodes[i], self.held_total[i]
        return (
            max(0, node.gpu - h[0] - k[0]),
            max(0, node.cpu - h[1] - k[1]),
            max(0, node.mem_gb - h[2] - k[2]),
        )

    def _start_entry(self, kind: str, i: int) -> Vec:
        """Node ``i``'s entry as it was at the session's start (free and held as then,
        no claims)."""
        f = self._start.free[i]
        if kind in ("free", "now"):
            return f  # free capacity is never negative
        if self._start.status[i] != "up":
            return (0, 0, 0)
        node, h = self.cluster.nodes[i], self._start.held[i]
        return (
            max(0, node.gpu - h[0]),
            max(0, node.cpu - h[1]),
            max(0, node.mem_gb - h[2]),
        )

    def _base(self, kind: str) -> list[Vec]:
        base = self._bases.get(kind)
        if base is None:
            start = self._start.bases.get(kind)
            if start is None:
                start = [self._start_entry(kind, i) for i in range(len(self.cluster))]
                self._start.bases[kind] = start
                self._start.fits[kind] = {}
            base = list(start)
            for i in sorted(self._touched):
                base[i] = self._entry(kind, i)
            self._bases[kind] = base
            self._shared_fits[kind] = {}
        return base

    def _fits_of(self, kind: str, shape: Shape) -> list[int]:
        """The fit counts of ``kind``'s base array (as in this session) for ``shape``."""
        carried = self._start.fits[kind]
        start = carried.get(shape)
        if start is None:
            if len(carried) >= MAX_CARRIED_SHAPES:
                carried.clear()
            start = carried[shape] = fit_counts(self.cluster, self._start.bases[kind], shape)
        fits = list(start)
        base, nodes = self._bases[kind], self.cluster.nodes
        for i in sorted(self._touched):
            fits[i] = fit_count(base[i], shape) if shape_fits_type(shape, nodes[i]) else 0
        return fits

    def _refresh(self, i: int, kinds: tuple[str, ...]) -> None:
        """Recompute node ``i`` in the base arrays of ``kinds`` (those whose entry reads
        what changed, see `_entry`) and their cached fit counts."""
        self.version += 1
        self._touched.add(i)
        gpu_type = self.cluster.nodes[i].gpu_type
        bases = self._bases
        for kind in kinds:
            base = bases.get(kind)
            if base is None:
                continue  # built later, from the entries then
            vec = self._entry(kind, i)
            base[i] = vec
            for shape, fits in self._shared_fits[kind].items():
                typed = shape.gpu_type  # `shape_fits_type`, inline
                fits[i] = fit_count(vec, shape) if typed is None or typed == gpu_type else 0

    def _view(self, kind: str, overlay: Mapping[int, Vec]) -> View:
        base = self._base(kind)
        return View(
            self.cluster,
            base,
            overlay,
            self._shared_fits[kind],
            (kind, self.version),
            partial(self._fits_of, kind),
        )

    def now_view(self, group: str | None, *, honour_claims: bool = True) -> View:
        """Free now (minus higher claims), plus the group's own holds. Like every view,
        valid until the ledger next changes."""
        overlay = self.held_by.get(group, {}) if group else {}
        return self._view("now" if honour_claims else "free", overlay)

    def now_view_with(self, group: str, avail: Mapping[int, Vec]) -> View:
        """`now_view` of ``group``, except that the nodes of ``avail`` offer that much
        (before the group's own holds) instead of their free capacity outside claims:
        what a borrower, or a reservation taking back what it lent, may use."""
        base = self._base("now")
        overlay = dict(self.held_by.get(group, {}))
        for node, vec in sorted(avail.items()):
            b = base[node]
            add_vecs(overlay, node, (vec[0] - b[0], vec[1] - b[1], vec[2] - b[2]))
        return self._view("now", overlay)

    def eventual_view(self, group: str, lower_holds: NodeVecs | None = None) -> View:
        """What the group could have once running work ends: capacity of up nodes minus
        other reservations' holds and higher claims; ``lower_holds`` are added back when
        the group may displace lower-ordered reservations."""
        overlay = dict(self.held_by.get(group, {}))
        for index, vec in sorted((lower_holds or {}).items()):
            add_vecs(overlay, index, vec)
        return self._view("eventual", overlay)


def empty_cluster_view(cluster: Cluster) -> View:
    """Every node's full capacity, whatever its status (for the check at submit)."""
    return View(cluster, [(n.gpu, n.cpu, n.mem_gb) for n in cluster.nodes], {})


def empty_up_view(cluster: Cluster) -> View:
    """The up nodes, empty: can the group fit the cluster as it is now, ever?"""
    return View(
        cluster,
        [
            (n.gpu, n.cpu, n.mem_gb) if cluster.is_up(i) else (0, 0, 0)
            for i, n in enumerate(cluster.nodes)
        ],
        {},
    )
