"""The host's allocator: capacity other work also uses, binds another scheduler can
beat, and the step planning a session again after a refused bind without leaking
anything the aborted plan held."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from costart.domain import decisions as dec
from costart.domain.capacity import Capacity
from costart.domain.events import DomainEvent
from costart.domain.invariants import check_world
from costart.domain.world import World
from costart.placement import (
    Allocator,
    BindConflict,
    Cluster,
    CoPlacementStep,
    HostAllocator,
)
from costart.placement.incremental import IncrementalStep
from costart.placement.step import MAX_REPLANS

from .allocator_contract import AllocatorContract
from .builders import Rig, a_cluster, a_group
from .host_loads import EmptyLoad, ScriptedLoad, SeededLoad, StaticLoad
from .test_same_decisions import RECORDED, _whole
from .workload import PLACEMENT_GROUPS, digests, run_workload


class TestHostAllocatorContract(AllocatorContract):
    def create_allocator(self, cluster: Cluster) -> Allocator:
        return HostAllocator(cluster, EmptyLoad(cluster))


def _host(nodes: int = 3) -> tuple[Cluster, ScriptedLoad, HostAllocator]:
    cluster = a_cluster(blocks=1, racks=1, nodes=nodes)
    load = ScriptedLoad(cluster)
    return cluster, load, HostAllocator(cluster, load)


# --- the allocator alone ------------------------------------------------------------------


def test_other_work_is_not_free_and_is_read_again_every_session() -> None:
    _, load, allocator = _host()
    load.put("b0-r0-n1", gpu=3, cpu=10, mem_gb=100)
    assert allocator.free_capacity(World())[1] == Capacity(5, 54, 412)
    allocator.commit()
    load.put("b0-r0-n1", gpu=8)  # more work arrived between sessions
    assert allocator.free_capacity(World())[1] == Capacity(0, 64, 512)
    allocator.commit()
    load.put("b0-r0-n1")  # and it left
    assert allocator.free_capacity(World())[1] == Capacity(8, 64, 512)


def test_a_raced_bind_is_refused_takes_nothing_and_the_next_reading_shows_the_race() -> None:
    _, load, allocator = _host()
    allocator.free_capacity(World())
    allocator.reserve("b0-r0-n0", Capacity(gpu=2))
    load.race("b0-r0-n0")
    with pytest.raises(BindConflict, match="b0-r0-n0") as refused:
        allocator.reserve("b0-r0-n0", Capacity(gpu=2))
    assert refused.value.free == Capacity()  # the other scheduler took all the room
    assert (allocator.binds, allocator.conflicts) == (1, 1)
    allocator.abort()
    assert allocator.free_capacity(World())[0] == Capacity(2, 0, 0)  # room it took: 6 GPUs


def test_the_other_scheduler_never_gets_what_the_sessions_own_releases_gave_back() -> None:
    """Releases take effect only once the session's decisions are recorded (never, if it
    is aborted): the room offered at a bind is what was free at the start minus the
    session's binds."""
    cluster, load, allocator = _host()
    rig = Rig(cluster)
    rig.occupy("g-run", {"b0-r0-n0": 6})
    allocator.free_capacity(rig.controller.world)
    allocator.release("b0-r0-n0", Capacity(gpu=6))
    allocator.reserve("b0-r0-n0", Capacity(gpu=1))
    allocator.reserve("b0-r0-n0", Capacity(gpu=4))
    assert [room for _, room in load.contended] == [Capacity(2, 64, 512), Capacity(1, 64, 512)]


def test_a_host_answer_of_the_wrong_size_is_refused() -> None:
    _, load, allocator = _host()
    load.use.append(Capacity())
    with pytest.raises(ValueError, match="outside use for 4 nodes; the cluster has 3"):
        allocator.free_capacity(World())


def test_a_host_that_takes_more_than_the_room_is_refused() -> None:
    cluster, _, _ = _host()

    class Greedy(EmptyLoad):
        def contend(self, node: int, room: Capacity) -> Capacity:
            return Capacity(gpu=room.gpu + 1)

    allocator = HostAllocator(cluster, Greedy(cluster))
    allocator.free_capacity(World())
    with pytest.raises(ValueError, match="took more than the room"):
        allocator.reserve("b0-r0-n0", Capacity(gpu=1))


# --- the step over it ----------------------------------------------------------------------


def _rig(load_nodes: int = 3) -> tuple[Rig, ScriptedLoad, HostAllocator]:
    cluster, load, allocator = _host(load_nodes)
    rig = Rig(cluster)
    rig.step = CoPlacementStep(allocator)
    rig.controller.placement = rig.step
    return rig, load, allocator


def _holds(rig: Rig, group: str) -> list[str]:
    return sorted(a.node for m in rig.controller.members(group) for a in (*m.held, *m.assignments))


def test_a_refused_bind_plans_the_session_again_and_the_gang_goes_where_it_fits() -> None:
    rig, load, _ = _rig()
    load.race("b0-r0-n0")
    rig.submit(a_group("g").with_member("w", gpu=8, tasks=2, claims=("data",)).build())
    rig.session()
    assert rig.status("g") == "PLACED"
    assert _holds(rig, "g") == ["b0-r0-n1", "b0-r0-n2"]
    assert rig.step.replans == 1


def test_a_reservation_holds_only_what_the_session_planned_again_holds() -> None:
    """The aborted plan held n0 and was refused n1; planned again (n1 now full of other
    work), the group holds n0 alone: nothing of the aborted plan reaches the log."""
    rig, load, allocator = _rig(4)
    load.put("b0-r0-n3", gpu=8)
    rig.occupy("g-run", {"b0-r0-n2": 8})
    load.race("b0-r0-n1")
    rig.submit(a_group("r").reserve().with_member("w", gpu=8, tasks=3, claims=("d",)).build())
    events = rig.session()
    assert rig.status("r") == "RESERVING"
    assert _holds(rig, "r") == ["b0-r0-n0"]
    assert [type(e).__name__ for e in events].count("MemberHeld") == 1
    assert rig.step.replans == 1 and allocator.conflicts == 1
    free = allocator.free_capacity(rig.controller.world)
    assert [c.gpu for c in free] == [0, 0, 0, 0]
    allocator.commit()


def test_a_session_refused_again_and_again_gives_up_and_decides_nothing() -> None:
    """Every plan loses its bind to another scheduler (each on the next node): after
    `MAX_REPLANS` plans again the session decides nothing, and the next one places."""
    rig, load, _ = _rig(MAX_REPLANS + 2)
    for node in rig.cluster.nodes[: MAX_REPLANS + 1]:
        load.race(node.name)
    rig.submit(a_group("g").with_member("w", gpu=1, tasks=1).build())
    world = rig.controller.world
    before = world.position
    assert rig.step.decide(world, rig.clock.advance(1)) == []
    assert rig.step.gave_up == 1 and rig.step.replans == MAX_REPLANS + 1
    assert rig.controller.world.position == before
    rig.session()
    assert _holds(rig, "g") == [rig.cluster.nodes[-1].name]


@pytest.mark.parametrize("plain", [False, True])
def test_a_step_over_the_host_without_other_work_decides_as_recorded(plain: bool) -> None:
    """Over the host's allocator (which counts usage from scratch and binds on every
    take), the incremental step and the plain one decide byte for byte as the recorded
    digests: the same path as over the in-memory allocator."""
    for seed in (1, 5, 9):
        sessions = run_workload(
            seed, allocator=lambda c: HostAllocator(c, EmptyLoad(c)), plain=plain
        )
        assert _whole(digests(sessions)) == RECORDED[seed]


class _ComparedWithFresh:
    """The step over the seeded host; each session, a fresh step over a copy of the
    cluster and the other work as the kept step last read it (no races) must decide
    the same, and the kept allocator's reading must equal a fresh one's. Every race refuses its bind, so the final plan of a session ran without
    one, unless the session gave up (then it decided nothing)."""

    def __init__(self, step: CoPlacementStep, load: SeededLoad) -> None:
        self.step = step
        self.load = load
        self.compared = self.gave_up = 0

    def check_feasible(self, spec: object) -> None:
        self.step.check_feasible(spec)  # type: ignore[arg-type]

    def check_node(self, node: str) -> None:
        self.step.check_node(node)

    def committed(self, events: Sequence[DomainEvent], position: int) -> None:
        self.step.committed(events, position)

    def decide(self, world: World, now_ns: int) -> list[dec.Decision]:
        gave_up = self.step.gave_up
        kept = self.step.decide(world, now_ns)
        if self.step.gave_up != gave_up:
            assert kept == []
            self.gave_up += 1
            return kept
        assert not self.load.raced_since_read
        cluster = Cluster(self.step.cluster.levels, self.step.cluster.nodes)
        cluster.sync_status(world.node_status)
        reading = StaticLoad(self.load.last_read)
        # The kept allocator recomputes only the nodes that moved: its reading equals
        # one from scratch.
        kept_free = self.step.allocator.free_capacity(world)
        self.step.allocator.abort()
        assert kept_free == HostAllocator(cluster, reading).free_capacity(world)
        fresh = CoPlacementStep(HostAllocator(cluster, reading))
        for name, topology in sorted(self.step.placement_groups.items()):
            fresh.register_placement_group(name, topology)
        assert fresh.decide(world, now_ns) == kept, f"session {self.compared} differs"
        self.compared += 1
        return kept


@pytest.mark.parametrize("seed", [2, 7, 11])
def test_with_other_work_and_races_each_session_decides_as_a_fresh_step(seed: int) -> None:
    holder: dict[str, SeededLoad] = {}
    checks: dict[str, _ComparedWithFresh] = {}

    def allocator(cluster: Cluster) -> HostAllocator:
        holder["load"] = SeededLoad(cluster, seed)
        return HostAllocator(cluster, holder["load"])

    def wrap(step: CoPlacementStep) -> CoPlacementStep:
        checks["step"] = _ComparedWithFresh(step, holder["load"])
        return checks["step"]  # type: ignore[return-value]

    def between(controller) -> None:  # type: ignore[no-untyped-def]
        load = holder["load"]
        load.check_no_overcommit(controller)
        check_world(controller.world, load.cluster.capacities())
        load.move(controller)

    run_workload(seed, sessions=30, allocator=allocator, wrap=wrap, between=between)
    compared = checks["step"]
    assert holder["load"].races > 0 and compared.step.replans > 0
    assert compared.compared + compared.gave_up == 30 and compared.compared >= 25
    assert PLACEMENT_GROUPS.keys() <= compared.step.placement_groups.keys()


# --- the incremental step over the host -----------------------------------------------


def _incremental_rig() -> tuple[Rig, ScriptedLoad]:
    cluster, load, allocator = _host(3)
    rig = Rig(cluster)
    rig.step = IncrementalStep(allocator)
    rig.controller.placement = rig.step
    return rig, load


def test_a_session_is_not_repeated_when_only_the_hosts_free_capacity_moved() -> None:
    """The World does not change, the host's other work does: the last session's
    waiting decisions must not be repeated over capacity that is no longer the same."""
    rig, load = _incremental_rig()
    for node in rig.cluster.nodes:
        load.put(node.name, gpu=8)  # the host's work fills every GPU
    group = a_group("g").with_member("w", gpu=8, tasks=1, claims=("data",))
    rig.submit(group.with_placement(mode="atomic").build())
    rig.session()
    rig.session()  # the same free capacity and World: a repeat
    assert isinstance(rig.step, IncrementalStep) and rig.step._last is not None
    assert rig.status("g") == "PENDING"
    load.put(rig.cluster.nodes[1].name)  # the host's work on n1 ends
    rig.session()
    assert rig.status("g") == "PLACED"
    assert _holds(rig, "g") == [rig.cluster.nodes[1].name]


def test_a_session_that_bound_capacity_is_never_repeated() -> None:
    """A repeat calls the allocator for nothing, so a session whose waiting groups took
    or gave capacity (binds the host saw) is not kept for one; a session that only
    explained why groups wait is."""
    rig, load = _incremental_rig()
    for node in rig.cluster.nodes[1:]:
        load.put(node.name, gpu=8)
    reserve = a_group("r").with_member("w", gpu=8, tasks=2, claims=("data",))
    rig.submit(reserve.with_placement(mode="reserve").build())
    before = len(load.contended)
    rig.session()  # opens the reservation: binds n0, claims one more task
    assert len(load.contended) > before and _holds(rig, "r") == [rig.cluster.nodes[0].name]
    assert isinstance(rig.step, IncrementalStep) and rig.step._last is None
    rig.session()  # holds what it held, waits: only a pend reason
    assert rig.step._last is not None
