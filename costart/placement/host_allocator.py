"""`HostAllocator`: free capacity the host owns, with binds the host may refuse.

Inside a real cluster controller most of the capacity is used by work costart does not
manage, and that work comes and goes between scheduling sessions; another scheduler
may also take a node's free capacity between the moment a session reads it and the
moment costart binds there. This allocator models both through a `HostLoad` port:

* free capacity per node = its capacity, minus what costart's live members hold and
  use (the `World`, as for the in-memory allocator), minus the host's other work
  (`HostLoad.outside_use`, read afresh every session); zero on nodes not up;
* `reserve` is a bind: the host gets a chance to place other work first
  (`HostLoad.contend`), out of what was free at the session's start and not yet bound
  by this session (never out of what the session's own releases gave back: those take
  effect only once the session's decisions are recorded, and an aborted session's
  never do). If it took anything, the session's reading of that node is stale: the bind
  raises `BindConflict` and takes nothing, and the step aborts the session and plans
  it again from a fresh reading (ADR 0026).

Kept from one session to the next: the last reading, recomputed on the nodes whose
costart usage (as its `UsageSource` reports), other work or status moved.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from itertools import compress
from operator import attrgetter, is_not, ne
from typing import Protocol, runtime_checkable

from costart.domain.capacity import Capacity
from costart.domain.world import World
from costart.placement.allocator import BindConflict, FreeClasses, OvercommitError
from costart.placement.cluster import Cluster
from costart.placement.holdings import UsageCount, UsageSource

ZERO = Capacity()
MAX_SHARED = 4096


class HostLoad(Protocol):
    """The host's side: the work costart does not manage, per node index."""

    def outside_use(self) -> Sequence[Capacity]:
        """What other work uses on each node now (one entry per node, in cluster
        order). Read once at the start of every session."""

    def contend(self, node: int, room: Capacity) -> Capacity:
        """A bind on ``node`` is about to happen: the capacity another scheduler takes
        there first, out of ``room`` (at most ``room``; zero when nobody raced). What it
        takes is the host's other work from then on (`outside_use` reports it)."""


@runtime_checkable
class DescribedLoad(HostLoad, Protocol):
    """A `HostLoad` that can say in words what a session's reading of it holds (for the
    pend reasons of groups that wait for capacity, ADR 0118)."""

    def describe(self, use: Sequence[Capacity]) -> str | None:
        """``use`` (an `outside_use` reading) in words; None when it holds nothing."""


def _fits(demand: Capacity, free: Capacity) -> bool:
    return demand.gpu <= free.gpu and demand.cpu <= free.cpu and demand.mem_gb <= free.mem_gb


def _minus(a: Capacity, b: Capacity) -> Capacity:
    """``a - b`` per dimension, never below zero."""
    return Capacity(max(0, a.gpu - b.gpu), max(0, a.cpu - b.cpu), max(0, a.mem_gb - b.mem_gb))


def _plus(a: Capacity, b: Capacity) -> Capacity:
    return Capacity(a.gpu + b.gpu, a.cpu + b.cpu, a.mem_gb + b.mem_gb)


Vec = tuple[int, int, int]
_VEC = attrgetter("gpu", "cpu", "mem_gb")


class _FreeOf(dict[tuple[Vec, Vec, Capacity], Capacity]):
    """(a node's own capacity, costart's use there, the other work there) -> the free
    `Capacity` of an up node, shared through ``shared``: looked up in C, where most
    nodes are alike and the used vectors and other work are few."""

    def __init__(self, shared: dict[Vec, Capacity]) -> None:
        super().__init__()
        self.shared = shared

    def __missing__(self, key: tuple[Vec, Vec, Capacity]) -> Capacity:
        (g, c, m), (ug, uc, um), other = key
        vec = (
            max(0, g - ug - other.gpu),
            max(0, c - uc - other.cpu),
            max(0, m - um - other.mem_gb),
        )
        free = self.shared.get(vec)
        if free is None:
            free = self.shared[vec] = Capacity(*vec)
        self[key] = free
        return free


class HostAllocator:
    """Free capacity = node capacity - costart's holds and placements - the host's other
    work; binds that another scheduler can beat (`HostLoad.contend`)."""

    def __init__(self, cluster: Cluster, load: HostLoad, usage: UsageSource | None = None) -> None:
        """``usage``: where costart's usage per node comes from (`UsageSource`; by
        default counted from scratch every session)."""
        self._cluster = cluster
        self._load = load
        self._usage = usage if usage is not None else UsageCount(cluster)
        # Free capacity as of the last reading, and what it was computed from (the host's
        # other work, node status); equal capacities share one object.
        self._settled: list[Capacity] = [ZERO] * len(cluster)
        self._outside: list[Capacity] = []
        self._status: list[str] = []
        self._shared: dict[tuple[int, int, int], Capacity] = {}
        self._free_of = _FreeOf(self._shared)
        own: list[Vec] = list(map(_VEC, cluster.nodes))
        vecs: dict[Vec, Vec] = {}
        self._capacity = list(map(vecs.setdefault, own, own))  # equal vectors shared
        self._free: list[Capacity] = []  # the session's free capacity, after its takes
        # Per node, what another scheduler may still take during this session: free at
        # the session's start minus the session's binds (releases never add to it).
        self._room: list[Capacity] = []
        self.binds = 0  # binds done (a refused one not counted)
        self.conflicts = 0  # binds refused

    @property
    def cluster(self) -> Cluster:
        return self._cluster

    @property
    def load(self) -> HostLoad:
        """The host's side this allocator reads."""
        return self._load

    def outside_note(self) -> str | None:
        """The last session's reading of the host's other work in words, when the load
        can say it (`DescribedLoad`); None otherwise or when it holds nothing."""
        if isinstance(self._load, DescribedLoad) and self._outside:
            return self._load.describe(self._outside)
        return None

    def free_capacity(self, world: World) -> list[Capacity]:
        changed = self._usage.sync(world)  # the nodes whose costart usage may have moved
        outside = list(self._load.outside_use())
        n = len(self._cluster)
        if len(outside) != n:
            raise ValueError(
                f"the host reported outside use for {len(outside)} nodes; the cluster has {n}"
            )
        status = self._cluster.status
        todo: Sequence[int]
        if changed is None or len(self._outside) != n:
            todo = range(n)  # every node, in order (no set of them all: a hash each)
        else:
            # `Capacity` is frozen: an entry that is the same object has the same value,
            # so only the nodes whose entry was replaced are computed again (C-level
            # comparisons over every node, Python work only where something moved).
            changed.update(compress(range(n), map(is_not, outside, self._outside)))
            if status != self._status:
                changed.update(compress(range(n), map(ne, status, self._status)))
            todo = sorted(changed)
        self._outside = outside
        if status != self._status:  # (a copy only when it moved: most sessions none)
            self._status = list(status)
        if len(self._shared) > MAX_SHARED or len(self._free_of) > MAX_SHARED:
            self._shared.clear()  # only sharing is lost, never a value
            self._free_of.clear()
        settled = self._settled
        # Each node of ``todo`` looked up by its own capacity, costart's use and the
        # other work there, in C (no Python code per node: a first reading computes
        # every node); then the nodes that are not up set to zero.
        keys = zip(
            map(self._capacity.__getitem__, todo),
            self._usage.use_of(todo),
            map(outside.__getitem__, todo),
            strict=True,
        )
        deque(map(settled.__setitem__, todo, map(self._free_of.__getitem__, keys)), maxlen=0)
        if status.count("up") != n:  # (counted in C)
            for i in todo:
                if status[i] != "up":
                    settled[i] = ZERO
        self._free = list(settled)
        self._room = list(settled)
        return list(settled)

    def free_classes(self, free: Sequence[Capacity]) -> FreeClasses | None:
        """Always None: this allocator's readings are not made by class (the host's
        other work moves any node's free capacity; `Allocator.free_classes`)."""
        return None

    def reserve(self, node: str, demand: Capacity) -> None:
        index = self._cluster.index[node]
        free = self._free[index]
        if not _fits(demand, free):
            raise OvercommitError(
                f"node {node}: take gpu {demand.gpu} cpu {demand.cpu} mem {demand.mem_gb}, "
                f"free gpu {free.gpu} cpu {free.cpu} mem {free.mem_gb}"
            )
        room = self._room[index]
        taken = self._load.contend(index, room)
        if not _fits(taken, room):
            raise ValueError(f"the host took more than the room on node {node}")
        if taken != ZERO:
            # Refused even when the bind would still fit (out of what the session's
            # releases gave back): the session's reading of the node is stale, and a
            # plan that goes on from it would take what is no longer there.
            self._room[index] = _minus(room, taken)
            free = self._free[index] = _minus(free, taken)
            self.conflicts += 1
            raise BindConflict(node, demand, free)
        self._free[index] = _minus(free, demand)
        self._room[index] = _minus(room, demand)
        self.binds += 1

    def release(self, node: str, demand: Capacity) -> None:
        index = self._cluster.index.get(node)
        if index is None or not self._cluster.is_up(index):
            return  # capacity on a node that is gone or closed is not free for anyone
        self._free[index] = _plus(self._free[index], demand)

    def commit(self) -> None:
        self._free, self._room = [], []

    def abort(self) -> None:
        """The session's binds are dropped with its decisions: the next session reads
        the World (which they never reached) and the host's other work again."""
        self._free, self._room = [], []
