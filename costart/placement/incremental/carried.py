"""`CarriedLedger`: the session ledger with its views' base arrays carried from one
session's start to the next (`StartCache`) instead of built from scratch.

At a session's start no claim exists yet, so a node's entry in every base array
depends only on its free capacity, its held capacity and its status (and the node's
fixed capacity and type). A session starts from the carried arrays and recomputes only
the nodes where one of those changed, instead of every node for every view kind and
shape. Equal inputs, equal entries: the arrays equal those the plain `SessionLedger`
builds from scratch (`tests/placement/test_session_ledger_current.py`).

Which nodes changed is found whatever the allocator: free capacity by comparing the
allocator's entries with the carried ones (by identity: allocators hand out the same
`Capacity` object for an unchanged node, and an equal copy only counts as changed),
held capacity from the nodes the step's `WorldUsage` reports moved, and status by
comparing the status as of the session's start (a tuple, the step's own) with the
carried one.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Hashable, Iterator, Sequence
from functools import partial
from itertools import compress
from operator import is_not, ne

from costart.domain.capacity import Capacity
from costart.domain.spec_types import Shape
from costart.placement.allocator import Allocator
from costart.placement.capacity import (
    BYTE_COUNTS,
    ZERO,
    CapacityView,
    FitCounts,
    Vec,
    fit_count,
)
from costart.placement.cluster import Cluster
from costart.placement.holdings import Holdings
from costart.placement.incremental.by_class import by_class
from costart.placement.incremental.domain_sums import DomainSums
from costart.placement.incremental.fit_table import FitTables
from costart.placement.incremental.usage import WorldUsage
from costart.placement.ledger import EVENTUAL, SessionLedger, ViewKind

MAX_SHARED_VECS = 4096
MAX_CARRIED_SHAPES = 256
# A view's content stand-in lists the nodes it may differ from the carried start on, in
# Python: past 1/CONTENT_SHARE of the nodes, reading the content itself (in C) costs less.
CONTENT_SHARE = 32
# Past that share, on a cluster of at least VERSIONED_FROM nodes, the stand-in names the
# shape's version (`CarriedLedger._versioned`) rather than the memo reading the content.
# A version holds for one session, a content across sessions: on a smaller cluster the
# content is cheap to read, and its reuse in the next session pays more.
VERSIONED_FROM = 1024
# Generation numbers, never reused in a process: two carried starts (two steps, or one
# step's start before and after `StartCache.forget`) never share one.
_GENERATIONS = itertools.count(1)
# Numbers naming one session's shared counts of a (kind, shape) as they stand after a
# change (`CarriedLedger._content_of`), never reused in a process either.
_SHAPE_VERSIONS = itertools.count(1)
_VERSIONED = "versioned"  # tags a stand-in made of a shape version
_BYTE = 256


class _ClassOf(dict[Capacity, int]):
    """Capacity -> its class: a small number, one per distinct vector (a C-level lookup);
    ``vecs[k]`` is class k's vector, one tuple shared by every node of the class."""

    def __init__(self) -> None:
        super().__init__()
        self.vecs: list[Vec] = []

    def __missing__(self, capacity: Capacity) -> int:
        k = self[capacity] = len(self.vecs)
        self.vecs.append((capacity.gpu, capacity.cpu, capacity.mem_gb))
        return k


class StartCache:
    """The views' base arrays and fit counts as they were at the start of the last
    session that built a ledger, carried into the next by the incremental step."""

    def __init__(self) -> None:
        self.class_of = _ClassOf()
        self.capacities: Sequence[Capacity] = []  # the allocator's entries, as of then
        self.free: list[Vec] = []  # the inputs as of the last session's start
        # Each node's class of free vector (``free[i] is class_of.vecs[classes[i]]``), and
        # per shape the count that fits each class: a shape's counts on the FREE and NOW
        # bases (which start as ``free``) are then read per node by class, not by
        # hashing each node's vector (`fits_by_class`). A byte array while every class
        # number fits in a byte (the usual case), else a list.
        self.classes: bytearray | list[int] = bytearray()
        self.class_fits: dict[Shape, list[int]] = {}
        self.held: list[Vec] = []
        self.status: tuple[str, ...] = ()  # the status as of then (a session's snapshot)
        self.bases: dict[ViewKind, list[Vec]] = {}
        self.fits: dict[ViewKind, dict[Shape, FitCounts]] = {}
        self.tables = FitTables()  # fit counts per distinct vector, for every shape
        # The carried fit counts summed per domain (made when a view is first asked).
        self.sums: dict[ViewKind, dict[Shape, DomainSums]] = {}
        # Per kind and shape, a number that changes whenever what the shape reads of
        # the carried base changes (a fit count, or the vector of a node where one
        # fits): equal numbers, equal content (`CarriedLedger._content_of`).
        self.generations: dict[ViewKind, dict[Shape, int]] = {}
        # Whether the per-node arrays were made afresh since the step last asked
        # (`made_afresh`): a start from scratch, not one brought up to date in place.
        self._afresh = False

    def forget(self) -> None:
        """Drop the carried arrays (another cluster size, or the classes renumbered):
        they are rebuilt on use."""
        self.capacities, self.free, self.held, self.status = [], [], [], ()
        self.bases, self.fits, self.sums, self.generations = {}, {}, {}, {}
        self.classes = bytearray()
        if len(self.class_of) > MAX_SHARED_VECS or len(self.class_fits) > MAX_CARRIED_SHAPES:
            self.class_of, self.class_fits = _ClassOf(), {}

    def fits_by_class(self, shape: Shape, largest: Vec) -> FitCounts:
        """`fit_counts` of ``free`` for ``shape`` (untyped: the GPU type is not read):
        each class's count, computed once, read per node by its class.

        While the classes are bytes and no node's count can pass 255, whatever its free
        vector (``largest``: the cluster's largest capacity in each dimension, which no
        node's free, held-back or eventual vector exceeds), the counts are a byte array:
        one `bytearray.translate` of the classes, and the counts the session keeps current
        in it stay within a byte. Otherwise a list, read per node by class."""
        counts = self.class_fits.setdefault(shape, [])
        vecs = self.class_of.vecs
        if len(counts) < len(vecs):
            counts.extend(fit_count(vec, shape) for vec in vecs[len(counts) :])
        classes = self.classes
        if (
            isinstance(classes, bytearray)
            and fit_count(largest, shape) <= BYTE_COUNTS
            and max(counts, default=0) <= BYTE_COUNTS
        ):
            return classes.translate(bytes(counts) + bytes(_BYTE - len(counts)))
        return [counts[k] for k in classes]  # (list indexes: see `_vecs_of`)

    def started_afresh(self) -> None:
        """The per-node arrays were just made afresh (a start from scratch)."""
        self._afresh = True

    def made_afresh(self) -> bool:
        """Whether the per-node arrays were made afresh (a start from scratch) since the
        last call; the step then promotes them past the collector's young generations
        (`costart.gc_pause.promote_tracked`)."""
        afresh, self._afresh = self._afresh, False
        return afresh

    def new_generation(self, kind: ViewKind, shape: Shape) -> None:
        """What ``shape`` reads of ``kind``'s carried base has (or may have) changed."""
        self.generations.setdefault(kind, {})[shape] = next(_GENERATIONS)


class CarriedLedger(SessionLedger):
    """A `SessionLedger` whose base arrays start from ``start`` (brought up to this
    session here). ``held_moved``: a superset of the nodes whose held capacity changed
    since ``start`` was last brought up to date (None: unknown, every node is
    compared). ``status``: the cluster's status as of this session's start, if the
    caller has it as a tuple (the step keeps one per session; the carried start keeps
    it rather than a copy of its own)."""

    def __init__(
        self,
        cluster: Cluster,
        allocator: Allocator,
        free: Sequence[Capacity],
        holdings: Holdings,
        start: StartCache,
        held_moved: set[int] | None,
        status: tuple[str, ...] | None = None,
    ) -> None:
        n = len(cluster)
        self._status = status if status is not None else cluster.status_now()
        # Held capacity as of this session's start, kept by the carried start: the
        # usage's own list where it lends it (`WorldUsage.lend_held`), else a copy.
        self._held = (
            holdings.lend_held() if isinstance(holdings, WorldUsage) else list(holdings.held_total)
        )
        too_many = (
            len(start.class_of) > MAX_SHARED_VECS or len(start.class_fits) > MAX_CARRIED_SHAPES
        )
        if len(start.free) != n or too_many:
            start.forget()  # (renumbers the classes if there are too many)
            held_moved = None
        if free is start.capacities:
            # The carried start keeps the allocator's list itself (no copy): one handed
            # out again, perhaps changed in place, cannot be compared with itself.
            held_moved = None
        self._start = start
        # This session's summaries: (kind, shape) -> the sums and the counts they sum.
        self._sums: dict[tuple[ViewKind, Shape], tuple[DomainSums, FitCounts]] = {}
        # (kind, shape) -> a number naming the session's shared counts of the shape, and
        # the vectors where one fits, as they stand: a new one whenever a refresh moves
        # either (see `_content_of`).
        self._shape_versions: dict[tuple[ViewKind, Shape], int] = {}
        self._candidates = (
            None if held_moved is None else _moved(self._status, free, start, held_moved)
        )
        # The class of each node's free vector (None: every node's, as ``_classes``) or
        # of each candidate's (``_moved_classes``), made with the vectors (`_vecs_of`).
        self._classes: bytearray | list[int] = bytearray()
        self._moved_classes: dict[int, int] = {}
        start.capacities = free  # (read-only, as every reader of the allocator's list)
        super().__init__(cluster, allocator, free, holdings.held_total, holdings.held_by)
        self._bring_up_to_date(start, self._candidates)

    def _vecs_of(self, free: Sequence[Capacity]) -> list[Vec]:
        # Equal capacities share one tuple, their class's (most nodes are alike): fewer
        # objects for the garbage collector to track in a session over thousands of
        # nodes, and one class number per node for `StartCache.fits_by_class`.
        class_of = self._start.class_of
        vecs = class_of.vecs
        if self._candidates is None:
            self._classes = classes = self._classes_of(free)
            return by_class(vecs, classes)
        # Elsewhere free capacity equals the carried start's: mapping every node's
        # `Capacity` would cost a hash per node.
        out = list(self._start.free)
        moved = self._moved_classes
        for i in self._candidates:
            k = moved[i] = class_of[free[i]]
            out[i] = vecs[k]
        return out

    def _held_of(self, held_total: Sequence[Vec]) -> list[Vec]:
        # The held capacity the carried start keeps (the usage's list as lent, which
        # never moves), shared until the session first changes it: most sessions hold
        # nothing new, and a copy of every node's entry each session is for nothing.
        self._held_shared = True
        return self._held

    def _held_to_change(self) -> list[Vec]:
        if self._held_shared:
            self.held_total = list(self.held_total)
            self._held_shared = False
        return self.held_total

    def _classes_of(self, free: Sequence[Capacity]) -> bytearray | list[int]:
        """Each node's class of free capacity: from the allocator's own classes of
        ``free`` when it offers them (`FreeClasses`: one lookup per class, then each
        node's translated in C), else each node's `Capacity` looked up (a hash each)."""
        class_of = self._start.class_of
        known = self.allocator.free_classes(free)
        if known is not None:
            ours = list(map(class_of.__getitem__, known.capacities))
            theirs = known.classes
            if isinstance(theirs, bytes | bytearray) and max(ours, default=0) < _BYTE:
                table = bytes(ours) + bytes(_BYTE - len(ours))
                return bytearray(theirs.translate(table))
            return by_class(ours, theirs)
        classes = _in_bytes(map(class_of.__getitem__, free))
        if len(classes) != len(free):  # (more than 256 classes: a list, read again)
            return list(map(class_of.__getitem__, free))
        return classes

    def _bring_up_to_date(self, start: StartCache, candidates: list[int] | None) -> None:
        """Recompute the carried arrays on the nodes whose inputs changed since (among
        ``candidates``, the moved nodes in order, if known)."""
        n, status = len(self.cluster), self._status
        # Unchanged entries are usually the same objects (shared vectors, the usage's
        # own tuples): compared by identity, an equal copy only counts as changed.
        if candidates is not None:
            order = self._moved_inputs(start, candidates)
            was_at = _entries_at(start.bases, order)
            free, start_free = self.free, start.free
            for i in order:  # (after ``was_at``: FREE's and NOW's start bases are this list)
                start_free[i] = free[i]
        else:
            changed: set[int] = set()
            if self.free != start.free:
                changed.update(compress(range(n), map(is_not, self.free, start.free)))
            if self.held_total != start.held:
                changed.update(compress(range(n), map(is_not, self.held_total, start.held)))
            if status != start.status:
                changed.update(compress(range(n), map(ne, status, start.status)))
            order = sorted(changed)
            was_at = _entries_at(start.bases, order)
            start.started_afresh()
            if len(start.free) == n:  # (in place: FREE's and NOW's start bases are this list)
                start.free[:] = self.free
            else:
                start.free = list(self.free)
            start.classes = self._classes  # (made with ``free``: no candidates)
            start.held = self._held
            start.status = status
        if not order:
            return
        nodes = self.cluster.nodes
        for kind, base in start.bases.items():
            carried = start.fits[kind].items()
            summed = start.sums.get(kind, {})
            read: dict[Shape, None] = {}  # shapes whose content moved (`_content_of`)
            # FREE's and NOW's start base is the carried free vectors, already moved
            # (their entry, the free vector itself: the class's shared tuple).
            own_list = base is not start.free
            for i, was in zip(order, was_at[id(base)], strict=True):
                vec = self._entry(kind, i)  # no claims yet: the start entry
                if vec == was:
                    # Fit counts read only the entry (and the node's type): unchanged.
                    # Free capacity moves without held capacity and back, so one kind
                    # of entry often stays.
                    continue
                if own_list:
                    base[i] = vec
                gpu_type = nodes[i].gpu_type
                for shape, fits in carried:
                    typed = shape.gpu_type  # `shape_fits_type`, inline
                    count = fit_count(vec, shape) if typed is None or typed == gpu_type else 0
                    before = fits[i]
                    if count or before:  # a count moved, or a vector where one fits
                        read[shape] = None
                    sums = summed.get(shape)
                    if sums is not None:
                        sums.add(i, count - before)
                    fits[i] = count
            for shape in read:
                start.new_generation(kind, shape)

    def _moved_inputs(self, start: StartCache, candidates: list[int]) -> list[int]:
        """The ``candidates`` whose inputs differ from ``start``'s (compared as the whole
        comparison does), with ``start``'s classes updated there, and its held capacity
        and status those of now (its free capacity is the caller's to update: it is
        also a start base). Every other node's inputs are unchanged since: equal, the
        carried entries stay right."""
        free, held, status = self.free, self.held_total, self._status
        start_free, start_held, start_status = start.free, start.held, start.status
        start_classes, classes = start.classes, self._moved_classes
        if isinstance(start_classes, bytearray) and any(k >= _BYTE for k in classes.values()):
            start_classes = start.classes = list(start_classes)  # (a class past a byte)
        order: list[int] = []
        for i in candidates:
            if (
                free[i] is not start_free[i]
                or held[i] is not start_held[i]
                or status[i] != start_status[i]
            ):
                order.append(i)
                start_classes[i] = classes[i]
        # Every node whose status or held capacity moved is a candidate (`_moved`):
        # both as of now.
        start.status, start.held = status, self._held
        return order

    def _start_entry(self, kind: ViewKind, i: int) -> Vec:
        """Node ``i``'s entry as it was at the session's start (free and held as then,
        no claims)."""
        f = self._start.free[i]
        if kind is not EVENTUAL:
            return f  # free capacity is never negative
        if self._start.status[i] != "up":
            return ZERO
        node, h = self.cluster.nodes[i], self._start.held[i]
        return (
            max(0, node.gpu - h[0]),
            max(0, node.cpu - h[1]),
            max(0, node.mem_gb - h[2]),
        )

    def _base(self, kind: ViewKind) -> list[Vec]:
        base = self._bases.get(kind)
        if base is None:
            start = self._start.bases.get(kind)
            if start is None:
                if kind is EVENTUAL:
                    start = [self._start_entry(kind, i) for i in range(len(self.cluster))]
                else:
                    # The start entry is the free vector itself: FREE's and NOW's start
                    # bases are the carried free vectors, one list (not a copy each: a
                    # list of every node kept is walked at every collection of its
                    # generation); `_bring_up_to_date` reads their entries before it
                    # moves any.
                    start = self._start.free
                self._start.bases[kind] = start
                self._start.fits[kind] = {}
                self._start.sums[kind] = {}
            base = list(start)
            for i in sorted(self._touched):
                base[i] = self._entry(kind, i)
            self._bases[kind] = base
            self._shared_fits[kind] = {}
        return base

    def _fits_of(self, kind: ViewKind, shape: Shape) -> FitCounts:
        carried = self._start.fits[kind]
        start = carried.get(shape)
        if start is None:
            if len(carried) >= MAX_CARRIED_SHAPES:
                carried.clear()
                self._start.sums[kind] = {}
            if kind is not EVENTUAL and shape.gpu_type is None:
                # FREE and NOW start as the free vectors (no claims at a start).
                start = carried[shape] = self._start.fits_by_class(shape, self.cluster.largest)
            else:
                start = carried[shape] = self._start.tables.fit_counts(
                    self.cluster, self._start.bases[kind], shape
                )
            self._start.new_generation(kind, shape)
        fits = start[:]  # (a list, or a byte array: its own kind, copied in C)
        base, nodes = self._bases[kind], self.cluster.nodes
        table, typed = self._fit_tables[shape], shape.gpu_type
        for i in sorted(self._touched):
            # (`fit_count` and `shape_fits_type`, by the session's table and inline)
            fits[i] = table[base[i]] if typed is None or typed == nodes[i].gpu_type else 0
        # (the view keeps these as the shared counts: `CapacityView.fits`)
        self._shape_versions[(kind, shape)] = next(_SHAPE_VERSIONS)
        return fits

    def _summaries(self, kind: ViewKind) -> Callable[[Shape], DomainSums | None] | None:
        return partial(self._summary_of, kind)

    def _summary_of(self, kind: ViewKind, shape: Shape) -> DomainSums | None:
        """This session's shared counts of ``kind`` for ``shape`` summed per domain:
        the carried sums (each level made once, then kept current with the carried
        counts) with the nodes this session changed moved. None if the view has no shared counts
        for the shape yet."""
        kept = self._sums.get((kind, shape))
        if kept is not None:
            return kept[0]
        fits = self._shared_fits.get(kind, {}).get(shape)
        start_fits = self._start.fits.get(kind, {}).get(shape)
        if fits is None or start_fits is None:
            return None
        summed = self._start.sums.setdefault(kind, {})
        start = summed.get(shape)
        if start is None:
            start = summed[shape] = DomainSums(self.cluster)
        # The session's nodes touched so far and later: read when a level is made.
        sums = DomainSums(self.cluster, start, start_fits, self._touched)
        self._sums[(kind, shape)] = (sums, fits)
        return sums

    def _contents(self, kind: ViewKind) -> Callable[[CapacityView, Shape], Hashable] | None:
        return partial(self._content_of, kind)

    def _content_of(self, kind: ViewKind, view: CapacityView, shape: Shape) -> Hashable:
        """`CapacityView.content_key` of ``view`` (one of ``kind``'s) for ``shape``:
        the carried start's generation for the shape, and the fit count (and, where one
        fits, the vector) of each node where the view may differ from that start (the
        nodes this session touched, and the view's overlay), unless the start's count
        and the view's are both 0 there (nothing a search reads). Every other node
        offers what the start offered, which the generation names. None when those
        nodes are too many for the stand-in to be cheaper than the content."""
        view.shared_fits(shape)  # (makes the carried counts, and their generation)
        start_fits = self._start.fits[kind].get(shape)
        generation = self._start.generations.get(kind, {}).get(shape)
        if start_fits is None or generation is None:  # (dropped: too many shapes carried)
            return None
        overlay = view.overlay_nodes()
        if (len(self._touched) + len(overlay)) * CONTENT_SHARE > len(start_fits):
            # (checked before the nodes are gathered: that costs as much)
            if len(start_fits) < VERSIONED_FROM:
                return None
            return self._versioned(kind, view, shape, overlay)
        fits = view.fits(shape)
        nodes = self._touched.union(overlay)
        avail = view.avail
        read: list[Hashable] = []
        for i in sorted(nodes):
            k = fits[i]
            if k:
                read.append((i, k, avail(i)))
            elif start_fits[i]:
                read.append((i, 0))
        return (kind, shape, generation, tuple(read))

    def _versioned(
        self, kind: ViewKind, view: CapacityView, shape: Shape, overlay: Sequence[int]
    ) -> Hashable:
        """The second kind of stand-in, for a session that touched many nodes: the
        number naming the shared counts of ``kind`` for ``shape`` as they stand (with
        the vectors where one fits; `_shape_versions`), and each overlay node's count
        (and vector, where one fits) in ``view``. A new number whenever a refresh moves
        a count, or a vector where one fits, so equal numbers, equal shared content;
        the overlay is listed whole. Session-local: numbers are never reused. None
        when the overlay alone is too large to list, or the shape's counts are not
        this session's shared ones."""
        version = self._shape_versions.get((kind, shape))
        if version is None or len(overlay) * CONTENT_SHARE > len(self.cluster):
            return None
        # The view's counts on its overlay nodes (as `CapacityView.fits` computes
        # them), without copying every node's.
        typed, nodes, avail = shape.gpu_type, self.cluster.nodes, view.avail
        read: list[Hashable] = []
        for i in sorted(overlay):
            vec = avail(i)
            k = fit_count(vec, shape) if typed is None or typed == nodes[i].gpu_type else 0
            read.append((i, k, vec) if k else (i, 0))
        return (_VERSIONED, kind, shape, version, tuple(read))

    def _refresh_counts(self, kind: ViewKind, i: int, vec: Vec, gpu_type: str | None) -> None:
        """`SessionLedger._refresh_counts`, and for each shape whose counts moved on the
        node (a count, or the vector where one fits) a new version (`_versioned`), and
        its domain sums moved by the count's change."""
        tables, versions, sums = self._fit_tables, self._shape_versions, self._sums
        version = 0  # one new number for every shape this change moves
        for shape, fits in self._shared_fits[kind].items():
            typed = shape.gpu_type  # `shape_fits_type`, inline
            count = tables[shape][vec] if typed is None or typed == gpu_type else 0
            was = fits[i]
            if count or was:
                if not version:
                    version = next(_SHAPE_VERSIONS)
                versions[(kind, shape)] = version
                if count != was:
                    fits[i] = count
                    summed = sums.get((kind, shape))
                    if summed is not None:
                        summed[0].add(i, count - was)


def _moved(
    status: tuple[str, ...], free: Sequence[Capacity], start: StartCache, held_moved: set[int]
) -> list[int]:
    """The nodes whose free capacity, held capacity or status (``status``, as of now)
    may have changed since ``start``'s inputs (a superset, in node order)."""
    n = len(free)
    moved = set(held_moved)
    carried = start.capacities
    if len(carried) != n:
        return list(range(n))
    if free != carried:  # a C-level pass, short of any Python work when all is the same
        moved.update(compress(range(n), map(is_not, free, carried)))
    if status != start.status:
        moved.update(compress(range(n), map(ne, status, start.status)))
    return sorted(moved)


def _in_bytes(codes: Iterator[int]) -> bytearray:
    """``codes`` (a class number per node) as bytes; cut short where one does not fit
    in a byte (the caller then reads them again as a list)."""
    try:
        return bytearray(codes)
    except ValueError:
        return bytearray()


def _entries_at(bases: dict[ViewKind, list[Vec]], order: list[int]) -> dict[int, list[Vec]]:
    """Per base list (by identity: two kinds may share one), its entries at ``order``."""
    return {id(base): [base[i] for i in order] for base in bases.values()}
