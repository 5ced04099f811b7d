"""`WorldUsage` (holds, the live list) kept across sessions from the committed events,
and `UsedCount` (use, read from the World's `node_use`), equal a count from scratch: a
fresh reader's, and the plain step's (`holdings.Usage`)."""

from __future__ import annotations

from collections import Counter
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from costart.cli.sim_cmd import controller_factory
from costart.domain import decisions as dec
from costart.domain import node_use as node_use_module
from costart.domain import scheduling
from costart.domain.aggregates import GroupUnit
from costart.domain.events import Assignment, MemberReleased
from costart.domain.lifecycle import submit
from costart.domain.spec import spec_from_object
from costart.domain.states import MemberState
from costart.domain.world import World
from costart.placement import CoPlacementStep
from costart.placement.capacity import ZERO
from costart.placement.holdings import Usage, wants_single
from costart.placement.incremental import EventJournal, IncrementalStep, UsedCount, WorldUsage
from costart.placement.incremental import journal as journal_module
from costart.placement.incremental import used as used_module
from costart.sim.results import POLICIES, run_policy
from tests.builders import apply_all
from tests.placement.oracles import used_capacity
from tests.sim.helpers import setup_of

from .builders import a_cluster
from .workload import run_workload


def _from_scratch(world: World, usage: WorldUsage) -> tuple[object, ...]:
    fresh = WorldUsage(usage._cluster, EventJournal())
    fresh.sync(world)
    plain = Usage(world, usage._cluster)
    assert (plain.held_total, plain.held_by, plain.wanting) == (
        fresh.held_total,
        fresh.held_by,
        fresh.wanting,
    )
    return _kept(fresh)


def _kept(usage: WorldUsage) -> tuple[object, ...]:
    return usage.held_total, usage.held_by, usage.live, usage.wanting


def _layout(world: World, usage: WorldUsage) -> tuple[object, ...]:
    """What an unchanged `WorldUsage.layout` promises is unchanged."""
    return (
        list(usage.held_total),
        {g: dict(h) for g, h in usage.held_by.items()},
        [(g.name, [(tuple(m.held), tuple(m.assignments)) for m in ms]) for g, ms in usage.live],
    )


class UsageCheck:
    """Before each session: the step's kept holds, synced, equal a fresh count, and an
    allocator's `UsedCount` equals `used_capacity`."""

    def __init__(self, step: CoPlacementStep) -> None:
        assert isinstance(step, IncrementalStep)
        self.step = step
        self.kept = WorldUsage(step.cluster, step.journal)  # fed as the step's is
        self.kept_used = UsedCount(step.cluster)
        self.sessions = 0
        self.last: tuple[int, tuple[object, ...]] | None = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self.step, name)

    def decide(self, world: World, now_ns: int) -> list[dec.Decision]:
        self.kept.sync(world)
        usage = self.kept
        assert _kept(usage) == _from_scratch(world, usage)
        live = [m for _, members in usage.live for m in members]
        assert usage.wanting == sum(map(wants_single, live))
        layout = _layout(world, usage)
        if self.last is not None and self.last[0] == usage.layout:
            assert self.last[1] == layout
        self.last = (usage.layout, layout)
        gpu, cpu, mem = used_capacity(world, self.step.cluster)
        self.kept_used.sync(world)
        assert self.kept_used.used == list(zip(gpu, cpu, mem, strict=True))
        self.sessions += 1
        return self.step.decide(world, now_ns)


# A first whole reading reports every node (None) or the set of nodes in use (`DENSE`: a
# factor that makes the first always, or never, chosen); ``used`` is the same either way.
BY_NAME = pytest.mark.parametrize("dense", [10**6, 0], ids=["every-node", "the-nodes-in-use"])


@settings(max_examples=10, deadline=None)
@given(st.integers(0, 10_000))
def test_usage_kept_across_sessions_equals_a_count_from_scratch(seed: int) -> None:
    checks: list[UsageCheck] = []

    def wrap(step: CoPlacementStep) -> Any:
        checks.append(UsageCheck(step))
        return checks[-1]

    run_workload(seed, wrap=wrap)
    assert checks[0].sessions == 30


def _synced_check() -> UsageCheck:
    """The checker of a busy workload's step, its readers synced to its World."""
    checks: list[UsageCheck] = []

    def wrap(step: CoPlacementStep) -> Any:
        checks.append(UsageCheck(step))
        return checks[-1]

    run_workload(3, sessions=12, wrap=wrap)
    assert checks[0].kept._cursor.world is not None and checks[0].kept.live
    return checks[0]


def _synced_usage() -> WorldUsage:
    """The kept usage of a busy workload's step, synced to its World."""
    return _synced_check().kept


def _replace_a_placed_member(world: World) -> tuple[str, MemberState]:
    """Replace, behind `World.apply`'s back, a live member that holds or uses nodes by
    a copy that holds and uses none; returns its key and the replaced object."""
    live = {str(i) for k in world.live_names.values() for i in world.groups[k].member_ids}
    key = next(k for k in sorted(live) if world.members[k].held or world.members[k].assignments)
    member = world.members[key]
    world.members[key] = msgspec.structs.replace(member, held=[], assignments=[])
    return key, member


def _assert_counted_and_listed(usage: WorldUsage, world: World, key: str, old: object) -> None:
    assert _kept(usage) == _from_scratch(world, usage)
    listed = [m for _, members in usage.live for m in members]
    assert any(m is world.members[key] for m in listed)
    assert not any(m is old for m in listed)


def test_a_replaced_member_object_is_recounted_and_listed() -> None:
    """A reader that fell behind the journal's bound compares the whole World, and so
    finds even a change made behind the journal's back."""
    usage = _synced_usage()
    world = usage._cursor.world
    assert world is not None
    key, member = _replace_a_placed_member(world)
    journal = usage._cursor.journal
    journal.keys.append(key)  # noted, as a committed event would be ...
    journal.trim(0)  # ... and dropped before the reader read it
    assert journal.since(usage._cursor.mark, world) is None
    usage.sync(world)
    _assert_counted_and_listed(usage, world, key, member)


def test_a_world_folded_past_the_journal_is_compared_whole() -> None:
    """A World whose log position is not the one the journal was told of had events
    folded that were never handed over: the reader compares everything."""
    usage = _synced_usage()
    world = usage._cursor.world
    assert world is not None
    key, member = _replace_a_placed_member(world)
    world.position += 1  # as a fold the journal was not told of moves it
    assert usage._cursor.journal.since(usage._cursor.mark, world) is None
    usage.sync(world)
    _assert_counted_and_listed(usage, world, key, member)


def test_a_journaled_member_with_a_new_object_is_recounted_and_listed() -> None:
    usage = _synced_usage()
    world = usage._cursor.world
    assert world is not None
    key, member = _replace_a_placed_member(world)
    usage._cursor.journal.keys.append(key)  # as a committed event about it is noted
    usage.sync(world)
    _assert_counted_and_listed(usage, world, key, member)


def test_a_reader_behind_the_live_changes_bound_compares_everything() -> None:
    """The journal dropped live changes the reader had not read: it cannot say which
    groups came or went, so the reader compares the whole World."""
    usage = _synced_usage()
    world = usage._cursor.world
    assert world is not None
    usage.sync(world)  # read the journal to its end
    key, member = _replace_a_placed_member(world)
    journal = usage._cursor.journal
    journal.live_changes.append(next(iter(world.live_names.values())))  # noted ...
    journal.trim_live_changes(0)  # ... and dropped before the reader read it
    assert journal.since(usage._cursor.mark, world) == []  # the member keys alone would vouch
    assert journal.live_changes_since(usage._cursor.relists) is None
    usage.sync(world)
    _assert_counted_and_listed(usage, world, key, member)


def test_a_live_set_the_journal_does_not_account_for_is_compared_whole() -> None:
    """The journal names a group that stays live while another left the World's live
    set unnamed (a change made behind its back, the position unchanged): the live list
    made from the journal would not have the World's length, so the reader compares
    everything instead of keeping the group that left."""
    usage = _synced_usage()
    world = usage._cursor.world
    assert world is not None
    usage.sync(world)  # read the journal to its end
    live_keys = list(world.live_names.values())
    assert len(live_keys) >= 2
    del world.live_names[world.groups[live_keys[0]].name]  # left, never journaled
    usage._cursor.journal.live_changes.append(live_keys[1])  # still live
    assert usage._cursor.journal.since(usage._cursor.mark, world) == []  # the journal vouches
    usage.sync(world)
    assert usage._live_keys == live_keys[1:]
    assert _kept(usage) == _from_scratch(world, usage)


def _synced_used() -> tuple[UsedCount, World]:
    """An allocator's count over a busy workload, synced to its World."""
    check = _synced_check()
    world = check.kept._cursor.world
    assert world is not None
    used = check.kept_used
    used.sync(world)
    return used, world


def _assert_used_from_scratch(used: UsedCount, world: World) -> None:
    assert used.used == Usage(world, used._cluster).used


def test_an_allocators_count_reads_only_the_nodes_whose_use_moved() -> None:
    """A member released by the fold moves the World's use on its nodes alone: a synced
    count reads those (and reports them), and equals the plain count."""
    used, world = _synced_used()
    key = next(
        str(i)
        for k in world.live_names.values()
        for i in world.groups[k].member_ids
        if world.members[str(i)].held or world.members[str(i)].assignments
    )
    member = world.members[key]
    nodes = {used._cluster.index[a.node] for a in (*member.held, *member.assignments)}
    group = world.groups[str(member.group_id)]
    unit = GroupUnit(group, world.members_of(group))
    unit.member(member.name).trigger(MemberReleased, 1, reason="test")
    apply_all(world, unit.pending_events)
    assert used.sync(world) == nodes
    _assert_used_from_scratch(used, world)
    assert used.sync(world) == set()  # nothing moved since


@BY_NAME
def test_an_allocators_count_of_a_use_counted_afresh_reads_it_whole(
    dense: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A change made around `apply` (a member replaced), then the World told to forget
    its use: the next sync reads the use counted afresh whole (None: every node)."""
    used, world = _synced_used()
    monkeypatch.setattr(used_module, "DENSE", dense)
    _replace_a_placed_member(world)
    world.forget_node_use()
    assert used.sync(world) is None
    _assert_used_from_scratch(used, world)


@BY_NAME
def test_an_allocators_count_behind_the_moved_list_reads_it_whole(
    dense: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The World's use dropped its list of moved nodes before the count read it: the
    count reads the use whole."""
    used, world = _synced_used()
    monkeypatch.setattr(used_module, "DENSE", dense)
    monkeypatch.setattr(node_use_module, "MOVED_KEPT", 0)
    mark = world.node_use.mark
    world.node_use.add((1, 1, 1), ["b0-r0-n0"])  # a move that drops the list
    world.node_use.add((1, 1, 1), ["b0-r0-n0"], -1)
    assert world.node_use.moved_since(mark) is None
    assert used.sync(world) is None
    _assert_used_from_scratch(used, world)


def _world_with_tasks_on(nodes: list[str]) -> World:
    """One running job with a task on each of ``nodes`` (repeats: several on a node)."""
    world = World()
    _run_job(world, "busy", {"gpu": 1, "cpu": 2, "mem_gb": 3}, nodes)
    return world


def _run_job(world: World, name: str, shape: dict[str, int], nodes: list[str]) -> None:
    """Submit job ``name`` of ``shape`` and place a task on each of ``nodes``."""
    members = [{"name": "w", "kind": "job", "tasks": len(nodes), "shape": shape}]
    spec = spec_from_object({"name": name, "owner": "t", "members": members})
    apply_all(world, submit(world, spec, 0).pending_events)
    group = world.group_named(name)
    unit = GroupUnit(group, world.members_of(group))
    scheduling.place_group(unit, {"w": tuple(Assignment(i, n) for i, n in enumerate(nodes))}, 0)
    apply_all(world, unit.pending_events)


@BY_NAME
def test_a_first_count_adds_every_shape_on_the_nodes_they_share(
    dense: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A first count tallies each shape's tasks per node and sets the first shape's
    entries outright (every entry is zero then): a second and a third job, one of another
    shape, on some of the same nodes, and tasks on a node the cluster lacks, must add
    up as a count member by member does, whichever way the World's use is read (every
    node reported when every node's name was read)."""
    monkeypatch.setattr(used_module, "DENSE", dense)
    cluster = a_cluster(blocks=1, racks=1, nodes=4)
    world = World()
    _run_job(world, "a", {"gpu": 1, "cpu": 2, "mem_gb": 3}, ["b0-r0-n0", "b0-r0-n1", "b0-r0-n0"])
    _run_job(world, "b", {"gpu": 2, "cpu": 1, "mem_gb": 8}, ["b0-r0-n1", "b0-r0-n2", "gone"])
    _run_job(world, "c", {"gpu": 1, "cpu": 2, "mem_gb": 3}, ["b0-r0-n2", "gone", "b0-r0-n0"])
    used = UsedCount(cluster)
    assert used.sync(world) == ({0, 1, 2} if not dense else None)
    # The reading handed over by name (the allocator's, ADR 0158): the World's use as
    # it is, the name the cluster lacks included.
    assert used.in_use() == world.node_use.as_dict()
    assert used.used == [(3, 6, 9), (3, 3, 11), (3, 3, 11), ZERO] == Usage(world, cluster).used


def test_a_count_hands_over_the_nodes_in_use_only_after_a_whole_reading() -> None:
    """`UsedCount.in_use` is the last sync's reading when it read the World's use whole
    (a copy: the World moving after it does not move it), None after a sync of the
    nodes that moved; ``used`` made from it equals the plain count."""
    cluster = a_cluster(blocks=1, racks=1, nodes=4)
    world = _world_with_tasks_on(["b0-r0-n0", "b0-r0-n1", "b0-r0-n1"])
    used = UsedCount(cluster)
    used.sync(world)
    read = used.in_use()
    assert read == {"b0-r0-n0": (1, 2, 3), "b0-r0-n1": (2, 4, 6)}
    _run_job(world, "more", {"gpu": 1, "cpu": 1, "mem_gb": 1}, ["b0-r0-n2"])
    assert used.in_use() == {"b0-r0-n0": (1, 2, 3), "b0-r0-n1": (2, 4, 6)}
    assert used.used == [(1, 2, 3), (2, 4, 6), ZERO, ZERO]
    assert used.sync(world) == {2}
    assert used.in_use() is None
    assert used.used == [(1, 2, 3), (2, 4, 6), (1, 1, 1), ZERO] == Usage(world, cluster).used


# A few tasks, many sharing nodes, and enough to be summed per node first (`MANY_TASKS`).
@pytest.mark.parametrize("tasks", [3, 40, 100])
@BY_NAME
def test_an_allocators_count_sums_tasks_per_node_and_skips_nodes_the_cluster_lacks(
    tasks: int, dense: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(used_module, "DENSE", dense)
    cluster = a_cluster(blocks=1, racks=1, nodes=4)
    names = [f"b0-r0-n{i % 5}" for i in range(tasks)]  # n4: not in the cluster
    world = _world_with_tasks_on(names)
    expected = [ZERO] * 4
    for name in names:
        if name != "b0-r0-n4":
            g, c, m = expected[cluster.index[name]]
            expected[cluster.index[name]] = (g + 1, c + 2, m + 3)
    used = UsedCount(cluster)
    # A first count: made with nothing used, it reports the nodes it counted on (every
    # node when it read every node's name).
    counted = {cluster.index[n] for n in names if n in cluster.index}
    assert used.sync(world) == (counted if not dense else None)
    assert used.used == expected == Usage(world, cluster).used
    del world.live_names["busy"]  # the job left the live set around `apply` ...
    world.forget_node_use()  # ... so the World's use is counted afresh: read whole
    assert used.sync(world) is None
    assert used.used == [ZERO] * 4


class JournalCheck:
    """After every sync of a step's usage or an allocator's count: it equals a count
    from scratch, and whether the journal or the whole comparison was used is counted."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.paths: Counter[str] = Counter()  # of the checked readers, not the fresh ones
        self.fresh: WorldUsage | UsedCount | None = None
        sync, used_sync = WorldUsage.sync, UsedCount.sync
        compare_all, compare_changed = WorldUsage._compare_all, WorldUsage._compare_changed
        came_or_went = WorldUsage._came_or_went

        def checked_sync(usage: WorldUsage, world: World) -> set[int] | None:
            changed = sync(usage, world)
            fresh = self.fresh = WorldUsage(usage._cluster, EventJournal())
            sync(fresh, world)
            assert (usage.held_total, usage.held_by) == (fresh.held_total, fresh.held_by)
            assert (usage.live, usage.wanting) == (fresh.live, fresh.wanting)
            self.paths["holds"] += 1
            self.paths["sync"] += 1
            return changed

        def checked_used_sync(used: UsedCount, world: World) -> set[int] | None:
            changed = used_sync(used, world)
            fresh = self.fresh = UsedCount(used._cluster)
            used_sync(fresh, world)
            assert used.used == fresh.used == Usage(world, used._cluster).used
            self.paths["used"] += 1
            self.paths["used_moved"] += changed is not None
            return changed

        def counted_all(usage: WorldUsage, world: World) -> None:
            self.paths["all"] += usage is not self.fresh
            compare_all(usage, world)

        def counted_changed(
            usage: WorldUsage, world: World, keys: list[str], came_or_went: list[str]
        ) -> None:
            self.paths["journal"] += usage is not self.fresh
            compare_changed(usage, world, keys, came_or_went)

        def counted_came_or_went(
            usage: WorldUsage, world: World, group_keys: list[str]
        ) -> list[str] | None:
            listed = came_or_went(usage, world, group_keys)
            self.paths["came_or_went"] += 1
            self.paths["live_set_unaccounted"] += listed is None
            return listed

        monkeypatch.setattr(WorldUsage, "_came_or_went", counted_came_or_went)
        monkeypatch.setattr(WorldUsage, "sync", checked_sync)
        monkeypatch.setattr(WorldUsage, "_compare_all", counted_all)
        monkeypatch.setattr(WorldUsage, "_compare_changed", counted_changed)
        monkeypatch.setattr(UsedCount, "sync", checked_used_sync)


@pytest.mark.parametrize("seed", [3, 11, 2024])
def test_the_journal_driven_usage_equals_a_count_from_scratch(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    check = JournalCheck(monkeypatch)
    run_workload(seed)
    assert check.paths["journal"] > 10 * check.paths["all"] > 0
    # Groups came and went, learnt from the journal's live changes alone.
    assert check.paths["came_or_went"] > 10 and check.paths["used_moved"] > 10
    assert check.paths["live_set_unaccounted"] == 0
    assert check.paths["used"] > 10 and check.paths["holds"] > 10  # both kinds of reader


@pytest.mark.parametrize("policy", POLICIES)
def test_the_journal_driven_usage_stays_current_in_the_simulator(
    policy: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    check = JournalCheck(monkeypatch)
    run_policy(setup_of("mixed", seed=4), policy, controller_factory)
    assert check.paths["journal"] > 10 * check.paths["all"] > 0
    assert check.paths["came_or_went"] > 10 and check.paths["used_moved"] > 10
    assert check.paths["live_set_unaccounted"] == 0


@BY_NAME
@pytest.mark.parametrize("policy", POLICIES)
def test_a_reader_behind_a_short_journal_compares_everything(
    policy: str, dense: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a journal bound of a few entries, readers often fall behind it and compare
    the whole World; the numbers stay equal to a count from scratch either way, the
    World's use read by every node's name or by the names in use."""
    monkeypatch.setattr(journal_module, "JOURNAL_LIMIT", 4)
    monkeypatch.setattr(used_module, "DENSE", dense)
    check = JournalCheck(monkeypatch)
    run_policy(setup_of("mixed", seed=4), policy, controller_factory)
    assert check.paths["all"] > 20 and check.paths["journal"] > 20


def test_a_lent_list_of_held_capacity_never_moves(monkeypatch: pytest.MonkeyPatch) -> None:
    """`WorldUsage.lend_held`: a list lent before a sync is left as it was (the usage
    changes a copy), through a workload's holds and releases."""
    sync = WorldUsage.sync
    seen: Counter[str] = Counter()

    def lending_sync(usage: WorldUsage, world: World) -> set[int] | None:
        lent = usage.lend_held()
        before = list(lent)
        changed = sync(usage, world)
        assert lent == before
        seen["copied" if usage.held_total is not lent else "kept"] += 1
        return changed

    monkeypatch.setattr(WorldUsage, "sync", lending_sync)
    run_workload(3)
    print(f"lent lists: {dict(seen)}")
    assert seen["copied"] > 5 and seen["kept"] > 5
