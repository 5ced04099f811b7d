"""The host's allocator against a trivially simple model, by hypothesis: sessions of
binds (some raced by another scheduler), releases, commits and aborts, with the host's
other work and node status moving between sessions. Every reading equals the model's
(so the incremental reading equals one from scratch), every bind raises exactly when
the model says it must, and a refused bind takes nothing."""

from __future__ import annotations

import pytest
from hypothesis import note
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from costart.domain.capacity import Capacity
from costart.domain.world import World
from costart.placement import BindConflict, HostAllocator, OvercommitError

from .builders import a_cluster
from .host_loads import ScriptedLoad

NODES = 3
CAP = Capacity(8, 64, 512)
NOTHING = Capacity()
nodes = st.integers(0, NODES - 1)
gpus = st.integers(0, 8)


def share(gpu: int) -> Capacity:
    """``gpu`` GPUs with the node's CPUs and memory per GPU."""
    return Capacity(gpu, 8 * gpu, 64 * gpu)


def minus(a: Capacity, b: Capacity) -> Capacity:
    return Capacity(max(0, a.gpu - b.gpu), max(0, a.cpu - b.cpu), max(0, a.mem_gb - b.mem_gb))


def plus(a: Capacity, b: Capacity) -> Capacity:
    return Capacity(a.gpu + b.gpu, a.cpu + b.cpu, a.mem_gb + b.mem_gb)


def fits(a: Capacity, b: Capacity) -> bool:
    return a.gpu <= b.gpu and a.cpu <= b.cpu and a.mem_gb <= b.mem_gb


class HostAllocatorMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.cluster = a_cluster(blocks=1, racks=1, nodes=NODES)
        self.load = ScriptedLoad(self.cluster)
        self.allocator = HostAllocator(self.cluster, self.load)
        self.world = World()
        # The model: the host's other work and node status, and within a session what
        # is free and what another scheduler may take.
        self.other = [NOTHING] * NODES
        self.up = [True] * NODES
        self.free: list[Capacity] | None = None  # None: between sessions
        self.room: list[Capacity] = []

    def _name(self, node: int) -> str:
        return self.cluster.nodes[node].name

    # --- between sessions --------------------------------------------------------------

    @precondition(lambda self: self.free is None)
    @rule(node=nodes, gpu=gpus)
    def other_work_moves(self, node: int, gpu: int) -> None:
        note(f"other work on n{node}: {gpu} GPUs")
        self.other[node] = share(gpu)
        self.load.use[node] = share(gpu)

    @precondition(lambda self: self.free is None)
    @rule(node=nodes, status=st.sampled_from(["up", "drained", "down"]))
    def node_status_changes(self, node: int, status: str) -> None:
        note(f"n{node} {status}")
        self.cluster.set_status(self._name(node), status)  # type: ignore[arg-type]
        self.up[node] = status == "up"

    @precondition(lambda self: self.free is None)
    @rule()
    def session_starts(self) -> None:
        reading = self.allocator.free_capacity(self.world)
        expected = [minus(CAP, self.other[i]) if self.up[i] else NOTHING for i in range(NODES)]
        note(f"session reads {[c.gpu for c in reading]}")
        assert reading == expected
        self.free, self.room = list(expected), list(expected)

    # --- within a session --------------------------------------------------------------

    @precondition(lambda self: self.free is not None)
    @rule(node=nodes, gpu=st.integers(1, 8), raced=st.booleans())
    def bind(self, node: int, gpu: int, raced: bool) -> None:
        assert self.free is not None
        demand = share(gpu)
        if raced:
            self.load.race(self._name(node))
        note(f"bind {gpu} GPUs on n{node}{' (raced)' if raced else ''}")
        if not fits(demand, self.free[node]):
            with pytest.raises(OvercommitError):
                self.allocator.reserve(self._name(node), demand)
            if raced:
                self.load.races.remove(node)  # never offered: the race did not happen
            return
        room = self.room[node]
        if raced and room != NOTHING:
            with pytest.raises(BindConflict):
                self.allocator.reserve(self._name(node), demand)
            self.other[node] = plus(self.other[node], room)  # it took all the room
            self.free[node] = minus(self.free[node], room)
            self.room[node] = NOTHING
            return
        self.allocator.reserve(self._name(node), demand)
        self.free[node] = minus(self.free[node], demand)
        self.room[node] = minus(room, demand)

    @precondition(lambda self: self.free is not None)
    @rule(node=nodes, gpu=st.integers(1, 8))
    def release(self, node: int, gpu: int) -> None:
        assert self.free is not None
        note(f"release {gpu} GPUs on n{node}")
        self.allocator.release(self._name(node), share(gpu))
        if self.up[node]:
            self.free[node] = plus(self.free[node], share(gpu))

    @precondition(lambda self: self.free is not None)
    @rule(end=st.sampled_from(["commit", "abort"]))
    def session_ends(self, end: str) -> None:
        note(end)
        getattr(self.allocator, end)()
        self.free = None

    @invariant()
    def the_hosts_other_work_is_as_modelled(self) -> None:
        assert self.load.use == self.other
        assert self.load.races == []


TestHostAllocatorMachine = HostAllocatorMachine.TestCase
