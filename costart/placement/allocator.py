"""The port to the cluster's allocator, and the in-memory adapter used by tests, serve
and the simulator.

The placement step asks the allocator for free capacity once per session, then tells it
what it takes (`reserve`) or gives back (`release`) while it decides, and `commit`s when
the session's decisions are final. A real controller's allocator binds or pre-empts on
those calls, and a bind can lose a race with another scheduler (`BindConflict`): the step
then `abort`s the session and plans it again from fresh free capacity (ADR 0026). The
in-memory one derives free capacity from the `World` (node capacity minus every member's
holds and placements), so it can never drift from the event log, and it re-checks every
take, so a placement bug surfaces as an error instead of an overcommitted node; its binds
never fail. `costart.placement.host_allocator` has the one whose capacity the host owns.
The contract both keep is tested by `tests/placement/allocator_contract.py`.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Sequence
from itertools import compress, repeat
from operator import attrgetter, ne
from typing import NamedTuple, Protocol, cast

from costart.domain.capacity import Capacity
from costart.domain.errors import DomainError
from costart.domain.world import World
from costart.placement.cluster import Cluster
from costart.placement.holdings import UsageCount, UsageInUse, UsageSource
from costart.placement.whole_reading import ClassedReading

ZERO = Capacity()
MAX_SHARED = 4096
_VEC = attrgetter("gpu", "cpu", "mem_gb")
_KIND = attrgetter("kind")


class OvercommitError(DomainError):
    """The step tried to take capacity a node does not have free (a bug in the step)."""


class BindConflict(Exception):
    """A bind lost a race: another scheduler took capacity on ``node`` after this
    session read it, so the session's reading is stale (``free``: what is free there
    now). Not an error of the step's: the session is aborted and planned again."""

    def __init__(self, node: str, demand: Capacity, free: Capacity) -> None:
        self.node = node
        self.demand = demand
        self.free = free
        super().__init__(
            f"bind on node {node} lost a race: wanted gpu {demand.gpu} cpu {demand.cpu} "
            f"mem {demand.mem_gb}, free now gpu {free.gpu} cpu {free.cpu} mem {free.mem_gb}"
        )


class FreeClasses(NamedTuple):
    """A whole reading's free capacity by class: ``free[i] is capacities[classes[i]]``
    for every node ``i`` of the list `free_capacity` returned."""

    classes: bytes | list[int]  # bytes while there are at most 256 classes
    capacities: list[Capacity]


class Allocator(Protocol):
    """Free capacity per node, and the session's reserve / release / commit / abort.

    Contract (`tests/placement/allocator_contract.py` checks it for every allocator):
    `free_capacity` is called first in a session and returns one entry per node of
    `cluster`, in cluster order, never negative; nodes that are not ``up`` report zero.
    `reserve` binds capacity on a node: it raises `OvercommitError` if the session's
    own reading of the node lacks it (the step's bug), or `BindConflict` if the host
    refuses it (another scheduler took capacity there since the session read it), and
    a refused bind takes nothing.
    `release` gives back what a `reserve` (or a hold or placement in the world) took;
    capacity on a node that is not up is not given to anyone. `commit` ends the session
    with its binds kept; `abort` ends it with every bind and release of it undone. After
    either, the next `free_capacity` reads the World again: what the session took or
    gave reaches it only through the decisions the Controller records.
    """

    @property
    def cluster(self) -> Cluster: ...

    def free_capacity(self, world: World) -> list[Capacity]: ...

    def free_classes(self, free: Sequence[Capacity]) -> FreeClasses | None:
        """The classes of ``free`` when it is the very list the last `free_capacity`
        returned, read by class (asked before any take); None otherwise."""
        ...

    def reserve(self, node: str, demand: Capacity) -> None: ...

    def release(self, node: str, demand: Capacity) -> None: ...

    def commit(self) -> None: ...

    def abort(self) -> None: ...


class _SharedCapacities(dict[tuple[int, int, int], Capacity]):
    """Vector -> one `Capacity` of it, made on first use: equal capacities share it."""

    def __missing__(self, vec: tuple[int, int, int]) -> Capacity:
        capacity = self[vec] = Capacity(*vec)
        return capacity


Vec3 = tuple[int, int, int]


class _FreeOf(dict[Vec3, Capacity]):
    """For nodes of one own capacity (``own``): what is used there -> the free
    `Capacity` of an up node, shared through ``shared``. A node's free capacity is looked
    up in C in its own capacity's table (most nodes are alike and the used vectors are
    few), keyed by the used vector alone: no pair made and hashed per node (ADR 0154)."""

    def __init__(self, own: Vec3, shared: _SharedCapacities, kind: int) -> None:
        super().__init__()
        self.own = own
        self.shared = shared
        self.kind = kind  # its number among the cluster's own capacities

    def __missing__(self, used: Vec3) -> Capacity:
        (g, c, m), (ug, uc, um) = self.own, used
        vec = (g - ug if g > ug else 0, c - uc if c > uc else 0, m - um if m > um else 0)
        free = self[used] = self.shared[vec]
        return free


_FREE_IN = dict.__getitem__  # (table, used) -> free, the table's ``__missing__`` included


class InMemoryAllocator:
    """Free capacity derived from the World; takes checked against it within a session.

    ``usage``: where the World's usage per node comes from (`UsageSource`): by default
    counted from scratch every session; the incremental step passes one kept current
    from the committed events. Either way a session recomputes the free capacity of
    the nodes whose usage or status may have changed, and the result equals a count
    from scratch (the tests' oracle, `tests.placement.oracles.used_capacity`). A whole
    reading from a source that names the nodes in use (`UsageInUse`, the incremental
    step's) is made by class from those nodes alone (`whole_reading`, ADR 0158); its
    classes are then `free_classes`."""

    def __init__(self, cluster: Cluster, usage: UsageSource | None = None) -> None:
        self._cluster = cluster
        self._usage = usage if usage is not None else UsageCount(cluster)
        # Equal capacities share one object: most nodes are alike.
        self._shared = _SharedCapacities()
        # Each node's own capacity as a vector, equal ones shared: read per node in a
        # sync without touching the node objects (on a large cluster, a cache miss each);
        # and each node's table of free capacity by use (`_FreeOf`), one per own vector.
        own: list[tuple[int, int, int]] = list(map(_VEC, cluster.nodes))
        vecs: dict[tuple[int, int, int], tuple[int, int, int]] = {}
        self._capacity = list(map(vecs.setdefault, own, own))
        self._free_of = {vec: _FreeOf(vec, self._shared, k) for k, vec in enumerate(vecs)}
        self._tables = list(map(self._free_of.__getitem__, self._capacity))
        # Free as of the last sync: to start with, every node empty and up, as the usage
        # source reports it before its first sync (each node's own capacity, built in C).
        self._settled: list[Capacity] = list(map(self._shared.__getitem__, self._capacity))
        self._status: list[str] = ["up"] * len(cluster)  # node status as of the last sync
        # The session's free capacity: ``_settled`` itself until the session's first take
        # or give copies it (most sessions take nothing). Immutable entries.
        self._free: list[Capacity] = []
        # A whole reading by class, when the usage source names the nodes in use (ADR
        # 0158), and the last such reading's list handed out with its classes.
        self._classed: ClassedReading | None = None
        if isinstance(self._usage, UsageInUse):
            # (alike nodes, the common case: no pass over the nodes for their kinds)
            kinds = None if len(vecs) == 1 else map(_KIND, self._tables)
            shared = self._shared.__getitem__
            self._classed = ClassedReading(cluster.index, kinds, list(vecs), shared)
        self._classes: tuple[list[Capacity], FreeClasses] | None = None

    @property
    def cluster(self) -> Cluster:
        return self._cluster

    def free_capacity(self, world: World) -> list[Capacity]:
        changed = self._usage.sync(world)
        status = self._cluster.status
        n = len(status)
        self._classes = None
        self._bound_sharing()
        classed = self._read_by_class(status)
        if classed is not None:
            return classed
        todo: Iterable[int]
        if changed is None or len(self._status) != n or len(self._settled) != n:
            todo = range(n)  # every node, in order (no set of them all: a hash each)
        else:
            if status != self._status:
                changed.update(compress(range(n), map(ne, status, self._status)))
            todo = sorted(changed)
        if status != self._status:  # (a copy only when it moved: most sessions none)
            self._status = list(status)
        settled = self._settled
        # Each node of ``todo`` looked up in its own capacity's table by its use, in C
        # (no Python code per node): every node in one pass (in place: the list stays
        # the same object), or the nodes of ``todo`` put in place; then the nodes that
        # are not up set to zero.
        if isinstance(todo, range):
            used = list(self._usage.use_of(todo))
            if len(used) != n or len(self._tables) != n:  # (a short list would cut the map)
                raise ValueError(
                    f"usage read for {len(used)} nodes, capacity for {len(self._tables)}; "
                    f"the cluster has {n}"
                )
            settled[:] = map(_FREE_IN, self._tables, used)
        else:
            uses = self._usage.use_of(todo)
            frees = map(_FREE_IN, map(self._tables.__getitem__, todo), uses)
            deque(map(settled.__setitem__, todo, frees), maxlen=0)
        if status.count("up") != n:  # (counted in C)
            zero = self._shared[(0, 0, 0)]
            for i in todo:
                if status[i] != "up":
                    settled[i] = zero
        self._free = settled
        return list(settled)

    def _bound_sharing(self) -> None:
        tables = self._free_of.values()
        if len(self._shared) > MAX_SHARED or sum(map(len, tables)) > MAX_SHARED:
            self._shared.clear()  # only sharing is lost, never a value
            for table in tables:
                table.clear()

    def _read_by_class(self, status: Sequence[str]) -> list[Capacity] | None:
        """Every node's free capacity computed from the nodes in use alone, by class
        (`costart.placement.whole_reading`), when the usage source's last sync read the
        World's use whole and names them; None: read the plain way."""
        classed, n = self._classed, len(status)
        if classed is None or classed.nodes != n:
            return None
        usage = cast(UsageInUse, self._usage)
        whole = usage.in_use()
        if whole is None:
            return None
        # (a source that looked the names' node indexes up hands them over: `UsedCount`)
        nodes = getattr(usage, "in_use_nodes", None)
        down: list[int] = []
        if status.count("up") != n:  # (counted in C)
            down = list(compress(range(n), map(ne, status, repeat("up"))))
        reading = classed.read(whole, down, nodes() if nodes is not None else None)
        if reading is None:
            return None
        if status != self._status:
            self._status = list(status)
        self._settled = self._free = reading.free
        handed = list(reading.free)
        self._classes = (handed, FreeClasses(reading.classes, reading.capacities))
        return handed

    def free_classes(self, free: Sequence[Capacity]) -> FreeClasses | None:
        """The classes of ``free`` when it is the very list the last `free_capacity`
        returned and that reading was whole, by class; None otherwise (see
        `Allocator.free_classes`)."""
        last = self._classes
        return last[1] if last is not None and last[0] is free else None

    def _session_free(self) -> list[Capacity]:
        """The session's own copy of free capacity, made on its first take or give."""
        if self._free is self._settled:
            self._free = list(self._settled)
        return self._free

    def reserve(self, node: str, demand: Capacity) -> None:
        index = self._cluster.index[node]
        session = self._session_free()
        free = session[index]
        if demand.gpu > free.gpu or demand.cpu > free.cpu or demand.mem_gb > free.mem_gb:
            raise OvercommitError(
                f"node {node}: take gpu {demand.gpu} cpu {demand.cpu} mem {demand.mem_gb}, "
                f"free gpu {free.gpu} cpu {free.cpu} mem {free.mem_gb}"
            )
        session[index] = Capacity(
            free.gpu - demand.gpu, free.cpu - demand.cpu, free.mem_gb - demand.mem_gb
        )

    def release(self, node: str, demand: Capacity) -> None:
        index = self._cluster.index.get(node)
        if index is None or not self._cluster.is_up(index):
            return  # capacity on a node that is gone or closed is not free for anyone
        session = self._session_free()
        free = session[index]
        session[index] = Capacity(
            free.gpu + demand.gpu, free.cpu + demand.cpu, free.mem_gb + demand.mem_gb
        )

    def commit(self) -> None:
        self._free, self._classes = [], None

    def abort(self) -> None:
        """Nothing is bound outside the World here: dropping the session's copy undoes
        its takes and gives."""
        self._free, self._classes = [], None
