"""`World.node_use`: the use per node the folds keep (ADR 0148), against a plain recount
after every command, and what a World decoded, copied or folded around `apply` does."""

from __future__ import annotations

import operator
import sys

import msgspec
import pytest

from costart.domain import node_use as node_use_module
from costart.domain.aggregates import GroupUnit
from costart.domain.decisions import HoldCapacity, PlaceGroup
from costart.domain.events import Assignment, MemberReleased
from costart.domain.lifecycle import submit
from costart.domain.node_use import NodeUse
from costart.domain.spec_types import GroupSpec
from costart.domain.state_copy import copy_world
from costart.domain.world import World
from costart.eventlog.codec import canonical_encode
from tests.builders import USER, a_group, apply_all, fail, full_placement, new_controller, start
from tests.domain.node_use_check import check_node_use, plain_node_use


def _spec(name: str = "g1") -> GroupSpec:
    return (
        a_group(name)
        .with_member("a", tasks=2, gpu=2, cpu=4, mem_gb=8)
        .with_member("b", replicas=3, min_running=1, gpu=1, cpu=1, mem_gb=2)
        .with_rule("tolerate", members=("b",))
        .build()
    )


def _on_shared_nodes(spec: GroupSpec) -> PlaceGroup:
    """Every task on two nodes, so tasks of both members share them."""
    return PlaceGroup(
        group=spec.name,
        assignments={
            m.name: tuple(Assignment(i, f"n{i % 2}") for i in range(m.count)) for m in spec.members
        },
    )


def test_the_kept_use_follows_every_command_that_moves_tasks() -> None:
    """Place, start, a replica failing, scaling down, a release, a hold, a cancel: after
    each, the kept use (the same object throughout) equals the plain recount."""
    c = new_controller()
    kept = c.world.node_use  # counted on this read; from here on kept by `apply`
    spec = _spec()
    c.submit(spec)
    c.apply_decisions([_on_shared_nodes(spec)])
    check_node_use(c.world)
    assert c.world.node_use.as_dict() == {"n0": (4, 6, 12), "n1": (3, 5, 10)}
    start(c, "g1/a")
    start(c, "g1/b")
    fail(c, "g1/b", "error", replica=1)  # one replica dropped from its node
    check_node_use(c.world)
    assert c.world.node_use.as_dict() == {"n0": (4, 6, 12), "n1": (2, 4, 8)}
    c.scale("g1/b", 1, actor=USER)
    check_node_use(c.world)
    c.cancel("g1", actor=USER)  # the group leaves the live set
    check_node_use(c.world)
    assert c.world.node_use.as_dict() == {}
    second = _spec("g2")
    c.submit(second)
    c.apply_decisions([HoldCapacity(group="g2", holds={"a": (Assignment(0, "n5"),)})])
    check_node_use(c.world)
    assert c.world.node_use.as_dict() == {"n5": (2, 4, 8)}
    c.apply_decisions([full_placement(second)])  # the hold given up for the placement
    check_node_use(c.world)
    assert "n5" not in c.world.node_use.as_dict()
    assert c.world.node_use is kept


def test_a_release_takes_the_members_tasks_away() -> None:
    c = new_controller()
    c.world.node_use  # noqa: B018 (kept from here on)
    spec = _spec()
    c.submit(spec)
    c.apply_decisions([_on_shared_nodes(spec)])
    moved_from = c.world.node_use.mark
    group = c.world.group_named("g1")
    unit = GroupUnit(group, c.world.members_of(group))
    unit.member("a").trigger(MemberReleased, 1, reason="test")
    apply_all(c.world, unit.pending_events)
    check_node_use(c.world)
    assert c.world.node_use.as_dict() == {"n0": (2, 2, 4), "n1": (1, 1, 2)}
    assert sorted(set(c.world.node_use.moved_since(moved_from) or [])) == ["n0", "n1"]


def test_a_decoded_or_copied_world_counts_its_use_on_first_read_and_encodes_none() -> None:
    c = new_controller()
    c.world.node_use  # noqa: B018
    spec = _spec()
    c.submit(spec)
    c.apply_decisions([full_placement(spec)])
    encoded = canonical_encode(c.world)
    copy = copy_world(c.world)
    assert copy._node_use is None  # not in the bytes: counted when read
    assert copy.node_use.as_dict() == c.world.node_use.as_dict() == plain_node_use(c.world)
    assert canonical_encode(copy) == encoded  # reading it wrote nothing into the state
    assert msgspec.msgpack.decode(msgspec.msgpack.encode(World()), type=World)._node_use is not None


def test_a_fold_around_apply_is_forgotten_and_counted_afresh() -> None:
    world = World()
    spec = _spec()
    apply_all(world, submit(world, spec, 0).pending_events)
    member = world.member_named(world.group_named("g1"), "a")
    member.assignments.append(Assignment(0, "n9"))  # around `apply`: not seen ...
    assert world.node_use.as_dict() == {}
    world.forget_node_use()  # ... until the World is told to forget its use
    assert world.node_use.as_dict() == {"n9": (2, 4, 8)} == plain_node_use(world)


def test_the_moved_list_is_dropped_past_its_bound_and_readers_are_told(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    use = NodeUse()
    use.add((1, 0, 0), ["a", "b", "a"])
    assert use.as_dict() == {"a": (2, 0, 0), "b": (1, 0, 0)}
    assert use.moved_since(0) == ["a", "b"]
    assert use.moved_since(use.mark + 1) is None  # a mark from another use
    monkeypatch.setattr(node_use_module, "MOVED_KEPT", 2)
    mark = use.mark
    use.add((1, 0, 0), ["c", "d"])
    use.add((1, 0, 0), ["a", "b", "c", "d"], -1)  # past the bound: dropped
    assert use.moved_since(mark) is None
    assert use.moved_since(use.mark) == []
    assert use.as_dict() == {"a": (1, 0, 0)}  # nodes back at zero have no entry


def test_the_kept_names_are_interned_whichever_way_they_came_in() -> None:
    """Names made at run time (never interned by the compiler) are kept interned, by a
    fold (`move_member`) and by a count afresh (`add_counts`): what lets the allocator
    find them among the cluster's interned names by identity (ADR 0160)."""
    c = new_controller()
    c.world.node_use  # noqa: B018 - kept by the folds from here on
    spec = _spec()
    c.submit(spec)
    interned = [sys.intern("late-0"), sys.intern("late-1")]
    names = ["".join(["late-", str(i)]) for i in range(2)]  # equal, other objects
    assert not any(map(operator.is_, names, interned))  # (else the test could not fail)
    c.apply_decisions(
        [
            PlaceGroup(
                group=spec.name,
                assignments={
                    m.name: tuple(Assignment(i, names[i % 2]) for i in range(m.count))
                    for m in spec.members
                },
            )
        ]
    )
    folded = sorted(c.world.node_use.names())
    assert all(map(operator.is_, folded, interned)), folded
    counted = sorted(copy_world(c.world).node_use.names())  # counted afresh
    assert all(map(operator.is_, counted, interned)), counted
