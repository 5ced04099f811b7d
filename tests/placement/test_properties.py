"""Properties of the step over random clusters and workloads: deterministic (also under
shuffled input order), never overcommitted, all-or-nothing, and free of deadlock."""

from __future__ import annotations

import random
from typing import Any

import msgspec
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from costart.domain.errors import SpecError
from costart.domain.spec_types import GroupSpec
from costart.domain.world import World
from costart.placement import Cluster, CoPlacementStep, InMemoryAllocator

from .builders import Rig, a_cluster, a_group

PROPERTY = settings(max_examples=60, deadline=None, derandomize=True)

member_st = st.fixed_dictionaries(
    {
        "gpu": st.sampled_from([1, 2, 4, 8]),
        "tasks": st.integers(1, 4),
        "pack": st.sampled_from([None, "rack", "block"]),
    }
)
group_st = st.fixed_dictionaries(
    {
        "mode": st.sampled_from(["atomic", "reserve"]),
        "priority": st.integers(0, 2),
        "members": st.lists(member_st, min_size=1, max_size=3),
        "group_pack": st.sampled_from([None, "block"]),
    }
)
workload_st = st.lists(group_st, min_size=1, max_size=6)
cluster_st = st.tuples(st.integers(1, 2), st.integers(1, 2), st.integers(2, 4))


def _spec(i: int, doc: dict[str, Any], mode: str | None = None) -> GroupSpec:
    builder = a_group(f"g{i}").with_priority(doc["priority"])
    builder = (
        builder.reserve(timeout="1h") if (mode or doc["mode"]) == "reserve" else builder.atomic()
    )
    if doc["group_pack"]:
        builder = builder.with_topology({"level": doc["group_pack"], "required": True})
    for j, m in enumerate(doc["members"]):
        topology = {"level": m["pack"], "required": True} if m["pack"] else None
        builder = builder.with_member(f"m{j}", gpu=m["gpu"], tasks=m["tasks"], topology=topology)
    return builder.build()


def _rig(
    shape: tuple[int, int, int], workload: list[dict[str, Any]], mode: str | None = None
) -> tuple[Rig, list[str]]:
    rig = Rig(a_cluster(*shape))
    names = []
    for i, doc in enumerate(workload):
        try:
            rig.submit(_spec(i, doc, mode))
            names.append(f"g{i}")
        except SpecError:
            pass
    return rig, names


def _assert_all_or_nothing(rig: Rig) -> None:
    for group in rig.controller.groups():
        for member in rig.controller.members(group.name):
            if group.status in ("PENDING", "RESERVING"):
                assert not member.assignments
            elif group.status in ("PLACED", "RUNNING"):
                assert len(member.assignments) >= member.spec.min_start


def _run(rig: Rig, names: list[str], sessions: int) -> list[bytes]:
    log = []
    for _ in range(sessions):
        events = rig.session(advance_s=5)
        log.append(msgspec.json.encode([type(e).__name__ for e in events]))
        _assert_all_or_nothing(rig)
        for name in names:
            if rig.status(name) == "RUNNING":
                rig.finish(name)
    return log


@PROPERTY
@given(cluster_st, workload_st)
def test_same_input_same_decisions_no_overcommit_all_or_nothing(
    shape: tuple[int, int, int], workload: list[dict[str, Any]]
) -> None:
    first, names = _rig(shape, workload)
    assume(names)
    second, _ = _rig(shape, workload)
    assert _run(first, names, 6) == _run(second, names, 6)
    assert [g.status for g in first.controller.groups()] == [
        g.status for g in second.controller.groups()
    ]


def _shuffled_world(world: World, seed: int) -> World:
    rng = random.Random(seed)
    groups = list(world.groups.items())
    members = list(world.members.items())
    live = list(world.live_names.items())
    for items in (groups, members, live):
        rng.shuffle(items)
    copy = msgspec.structs.replace(world)
    copy.groups = dict(groups)
    copy.members = dict(members)
    copy.live_names = dict(live)
    return copy


@PROPERTY
@given(cluster_st, workload_st, st.integers(0, 1000))
def test_shuffled_dict_and_node_order_give_the_same_decisions(
    shape: tuple[int, int, int], workload: list[dict[str, Any]], seed: int
) -> None:
    rig, _ = _rig(shape, workload)
    rig.session()  # some groups placed or reserving, so the next session has state
    world = rig.controller.world
    now = rig.clock.now_ns + 5
    expected = CoPlacementStep(InMemoryAllocator(a_cluster(*shape))).decide(world, now)
    nodes = list(a_cluster(*shape).nodes)
    random.Random(seed).shuffle(nodes)
    shuffled_step = CoPlacementStep(InMemoryAllocator(Cluster(["block", "rack"], nodes)))
    assert shuffled_step.decide(_shuffled_world(world, seed), now) == expected


@PROPERTY
@given(cluster_st, workload_st)
def test_reservations_never_deadlock_every_group_eventually_runs(
    shape: tuple[int, int, int], workload: list[dict[str, Any]]
) -> None:
    rig, names = _rig(shape, workload, mode="reserve")
    assume(len(names) > 1)
    ran: set[str] = set()
    for _ in range(4 * len(names) + 4):
        rig.session(advance_s=5)
        _assert_all_or_nothing(rig)
        for name in names:
            if rig.status(name) in ("RUNNING", "SUCCEEDED"):
                ran.add(name)
                rig.finish(name)
        if ran == set(names):
            break
    assert ran == set(names)
