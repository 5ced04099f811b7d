"""Within a session the ledger keeps its views' arrays current change by change, and a
session with nothing to place builds no ledger; neither changes what the step decides.

* Each time a view is made, every base array and cached fit count the ledger keeps
  must equal one computed from scratch from its free, held and claimed capacity (a
  change refreshes only the view kinds whose entries read what it changed).
* A step that always builds the ledger and visits every group must decide as the
  kept step does, every session (the kept one skips the ledger when no group waits and
  no member wants a single placement).
* The incremental step's carried start (`CarriedLedger`) must equal the session's own
  arrays computed from scratch, whichever nodes it found moved.
"""

from __future__ import annotations

import operator
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import msgspec
import pytest

from costart.cli.sim_cmd import controller_factory
from costart.domain.capacity import Capacity
from costart.domain.spec_types import Shape
from costart.domain.world import World
from costart.placement import CoPlacementStep, InMemoryAllocator
from costart.placement.capacity import CapacityView, NodeVecs, Vec, fit_counts
from costart.placement.holdings import Holdings
from costart.placement.incremental import EventJournal, IncrementalStep, WorldUsage
from costart.placement.incremental.carried import CarriedLedger, StartCache
from costart.placement.incremental.domain_sums import DomainSums
from costart.placement.ledger import SessionLedger, ViewKind
from costart.placement.step import Order, SessionPlan
from costart.sim.results import POLICIES, run_policy
from tests.placement.oracles import used_capacity
from tests.sim.helpers import setup_of

from .builders import a_cluster
from .compared_step import ComparedStep
from .workload import run_workload


class ArraysCheck:
    """Checks every ledger's kept arrays whenever it makes a view; counts the checks."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.checks = 0
        self.summaries = 0  # levels of session domain sums compared
        self.kinds: Counter[str] = Counter()  # shared counts compared, by their kind
        make = SessionLedger._view

        def checked(ledger: SessionLedger, kind: ViewKind, overlay: Any) -> CapacityView:
            self.check(ledger)
            return make(ledger, kind, overlay)

        monkeypatch.setattr(SessionLedger, "_view", checked)

    def check(self, ledger: SessionLedger) -> None:
        n = len(ledger.cluster)
        for kind, base in ledger._bases.items():
            assert base == [ledger._entry(kind, i) for i in range(n)], kind
            for shape, fits in ledger._shared_fits[kind].items():
                assert list(fits) == fit_counts(ledger.cluster, base, shape), (kind, shape)
                self.kinds[type(fits).__name__] += 1
        if isinstance(ledger, CarriedLedger):
            # This session's domain sums: those of its shared counts, recounted.
            for (kind, shape), (sums, fits) in ledger._sums.items():
                assert fits is ledger._shared_fits[kind][shape], (kind, shape)
                full = DomainSums.of(ledger.cluster, fits).by_level
                assert sums.by_level == {level: full[level] for level in sums.by_level}
                self.summaries += len(sums.by_level)  # levels compared
        self.checks += 1


@pytest.mark.parametrize("seed", [3, 11, 2024])
def test_the_ledgers_arrays_stay_equal_to_a_count_from_scratch(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    arrays = ArraysCheck(monkeypatch)
    run_workload(seed)
    assert arrays.checks > 100
    assert arrays.summaries > 100
    print(f"shared counts compared, by kind: {dict(arrays.kinds)}")
    # Both kinds of counts are compared: byte arrays (the carried counts of untyped
    # shapes) and lists (typed shapes, eventual capacity).
    assert arrays.kinds["bytearray"] > 100 and arrays.kinds["list"] > 100


@pytest.mark.parametrize("policy", POLICIES)
def test_the_ledgers_arrays_stay_current_in_the_simulator(
    policy: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    arrays = ArraysCheck(monkeypatch)
    run_policy(setup_of("mixed", seed=4), policy, controller_factory)
    assert arrays.checks > 100


class _NeverIdle(NamedTuple):
    """Holdings as counted, except that a member always seems to want a single
    placement: the session is never idle (`place_singles` places only the members that
    do want one, so nothing else changes)."""

    held_total: Sequence[Vec]
    held_by: dict[str, NodeVecs]
    wanting: int


class AlwaysBuilds(CoPlacementStep):
    """The plain step without the idle-session shortcut: it builds the ledger and visits
    every group every session."""

    def _plan(
        self,
        world: World,
        now_ns: int,
        order: Order,
        holdings: Holdings,
        ledger: Callable[[], SessionLedger],
    ) -> SessionPlan:
        never_idle = _NeverIdle(holdings.held_total, holdings.held_by, max(1, holdings.wanting))
        planned = super()._plan(world, now_ns, order, never_idle, ledger)
        assert not planned.idle
        return planned


class IdleCheck(ComparedStep):
    """Each session, a fresh step that always builds the ledger must agree; counts the
    sessions the kept step found idle."""

    def __init__(self, step: Any) -> None:
        super().__init__(step, AlwaysBuilds)
        self.idle = 0

    def observed(self, inner: CoPlacementStep) -> None:
        assert isinstance(inner, IncrementalStep)
        last = inner._last
        self.idle += last is not None and not last.visits


def test_an_idle_session_decides_as_one_that_builds_the_ledger() -> None:
    checks: list[IdleCheck] = []

    def wrap(step: CoPlacementStep) -> Any:
        checks.append(IdleCheck(step))
        return checks[-1]

    for seed in (5, 77, 300):
        run_workload(seed, wrap=wrap)
    assert sum(c.idle for c in checks) > 0


@pytest.mark.parametrize("policy", POLICIES)
def test_idle_simulated_sessions_decide_as_ones_that_build_the_ledger(policy: str) -> None:
    checks: list[IdleCheck] = []

    def factory(**kwargs: Any) -> Any:
        checks.append(IdleCheck(kwargs["placement"]))
        return controller_factory(**{**kwargs, "placement": checks[-1]})

    plain, _ = run_policy(setup_of("mixed", seed=6), policy, controller_factory)
    checked, _ = run_policy(setup_of("mixed", seed=6), policy, factory)
    assert checked.log_sha256 == plain.log_sha256
    assert sum(c.idle for c in checks) > 0


class StartCheck:
    """After every carried ledger's start, the carried start inputs and arrays must equal
    the session's own, computed from scratch: the start is brought up to date comparing
    only the nodes found moved. Counts the starts, and those brought up to date on the
    moved nodes only (``hinted``)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.hinted = 0
        self.started = 0
        self.summed = 0  # levels of carried domain sums compared
        init = CarriedLedger.__init__

        def checked(ledger: CarriedLedger, *args: Any, **kwargs: Any) -> None:
            init(ledger, *args, **kwargs)
            self.summed += self.check(ledger)
            self.started += 1
            self.hinted += ledger._candidates is not None

        monkeypatch.setattr(CarriedLedger, "__init__", checked)

    @staticmethod
    def check(ledger: CarriedLedger, world: World | None = None) -> int:
        """Returns how many levels of carried domain sums it compared."""
        start, cluster = ledger._start, ledger.cluster
        summed = 0
        if world is not None:
            gpu, cpu, mem = used_capacity(world, cluster)
            assert ledger.free == [
                (max(0, n.gpu - gpu[i]), max(0, n.cpu - cpu[i]), max(0, n.mem_gb - mem[i]))
                if cluster.is_up(i)
                else (0, 0, 0)
                for i, n in enumerate(cluster.nodes)
            ]
        assert ledger.free == [(c.gpu, c.cpu, c.mem_gb) for c in start.capacities]
        assert start.free == ledger.free
        # Each node's class names its free vector (the counts by class read it).
        assert len(start.classes) == len(start.free)
        assert all(
            map(operator.is_, start.free, map(start.class_of.vecs.__getitem__, start.classes))
        )
        assert start.held == ledger.held_total
        assert start.status == tuple(cluster.status)
        for kind, base in start.bases.items():
            # No claims yet: the session's own entries are the start entries.
            assert base == [ledger._entry(kind, i) for i in range(len(cluster))], kind
            for shape, fits in start.fits[kind].items():
                assert list(fits) == fit_counts(cluster, base, shape), (kind, shape)
            # The carried domain sums, brought up to date with the carried counts.
            for shape, sums in start.sums.get(kind, {}).items():
                full = DomainSums.of(cluster, start.fits[kind][shape]).by_level
                assert sums.by_level == {level: full[level] for level in sums.by_level}
                summed += len(sums.by_level)  # levels compared
        return summed


@pytest.mark.parametrize("seed", [3, 11, 2024])
def test_a_start_brought_up_to_date_on_the_moved_nodes_equals_one_from_scratch(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    starts = StartCheck(monkeypatch)
    run_workload(seed)
    assert starts.hinted > 10
    assert starts.summed > 10


@pytest.mark.parametrize("policy", POLICIES)
def test_simulated_starts_brought_up_to_date_on_the_moved_nodes_are_exact(
    policy: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    starts = StartCheck(monkeypatch)
    run_policy(setup_of("mixed", seed=4), policy, controller_factory)
    assert starts.hinted > 100


def test_a_status_change_alone_reaches_the_carried_start() -> None:
    """Drained, then down: free and held capacity stay the same objects (zero, none),
    only the status moves; the carried start must follow it."""
    cluster = a_cluster(blocks=1, racks=1, nodes=3)
    journal = EventJournal()
    usage = WorldUsage(cluster, journal)
    allocator, start, world = InMemoryAllocator(cluster), StartCache(), World()
    for status in ("up", "drained", "down", "up"):
        world.node_status["b0-r0-n1"] = status
        cluster.sync_status(world.node_status)
        free = allocator.free_capacity(world)
        moved = usage.sync(world)
        ledger = CarriedLedger(cluster, allocator, free, usage, start, moved)
        for kind in ViewKind:
            ledger._view(kind, {}).fits(Shape(gpu=1))  # arrays carried from here on
        StartCheck.check(ledger, world)
        allocator.commit()


def test_a_step_handed_another_world_compares_its_carried_start_on_every_node(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A World object the step has not read (a restored controller's) is counted afresh,
    and its carried start compared on every node, not only on those found moved: here
    the other World has every reservation's held tasks placed instead, so free capacity
    is the same on every node (the same shared objects) and only holds moved."""
    seen: list[tuple[World, int]] = []

    class Watch(ComparedStep):
        def decide(self, world: World, now_ns: int) -> list[Any]:
            if any(m.held for m in world.members.values()):
                seen.append((world, now_ns))
            return super().decide(world, now_ns)

    steps: list[Watch] = []

    def wrap(step: CoPlacementStep) -> Any:
        steps.append(Watch(step))
        return steps[-1]

    run_workload(3, sessions=20, wrap=wrap)
    world, now_ns = seen[-1]
    other = msgspec.msgpack.decode(msgspec.msgpack.encode(world), type=World)
    moved = 0
    for member in other.members.values():
        if member.held:
            member.assignments = [*member.held, *member.assignments]
            member.held = []
            moved += 1
    assert moved
    starts = StartCheck(monkeypatch)
    steps[0].decide(other, now_ns)
    assert (starts.started, starts.hinted) == (1, 0)  # a ledger, its start compared whole


def test_an_allocator_handing_out_one_list_changed_in_place_reaches_the_carried_start() -> None:
    """The carried start keeps the allocator's list of free capacity itself, not a copy;
    an allocator that hands out the same list again, changed in place, must still have
    its changes found (the list compared with itself would show none)."""
    cluster = a_cluster(blocks=1, racks=1, nodes=3)
    usage = WorldUsage(cluster, EventJournal())
    start, world = StartCache(), World()
    full = InMemoryAllocator(cluster).free_capacity(world)
    kept = list(full)

    class OneList(InMemoryAllocator):
        def free_capacity(self, world: World) -> list[Capacity]:
            return kept

    allocator = OneList(cluster)
    for node_1 in (full[1], Capacity(gpu=1, cpu=2, mem_gb=4), full[1]):
        kept[1] = node_1  # (in place: the same list handed out again)
        free = allocator.free_capacity(world)
        ledger = CarriedLedger(cluster, allocator, free, usage, start, usage.sync(world))
        for kind in ViewKind:
            ledger._view(kind, {}).fits(Shape(gpu=1))
        assert start.free[1] == (node_1.gpu, node_1.cpu, node_1.mem_gb)
        StartCheck.check(ledger)
