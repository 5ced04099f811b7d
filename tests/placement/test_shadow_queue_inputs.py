"""The queue inputs the three plans of an estimate share (`queue_inputs`, ADR 0144):
plans made one after another over inputs built once are the plans made from the World
alone, each queue and profile built from scratch as the planner did before it shared
them, at every level of the learned runs and over declared limits, for random worlds of
running and waiting groups (priorities, pack scopes, members of several shapes)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from costart.domain.decisions import PlaceGroup
from costart.domain.events import Assignment
from costart.domain.runtime_history import RuntimeHistory
from costart.domain.states import GROUP_WAITING
from costart.domain.world import World
from costart.placement.cluster import Cluster
from costart.placement.constraints import resolve_scopes
from costart.placement.holdings import live_in_order
from costart.placement.inputs import gang_demands
from costart.placement.shadow import (
    PlannedStart,
    Waiting,
    expected_starts,
    gang_runtime,
    plan_queue,
    profile_of,
)
from costart.placement.shadow.admission import admitted_runtime, claimed_from
from costart.placement.shadow.learned import LearnedRuntimes
from costart.placement.shadow.queue import queue_inputs

from .builders import Rig, a_cluster, a_group

PATHS: Counter[str] = Counter()
RACK_PACK = {"level": "rack", "policy": "pack", "required": True}


def _from_scratch(
    cluster: Cluster, world: World, now: int, learned: LearnedRuntimes, admit: bool
) -> dict[str, PlannedStart]:
    """The plan with its queue and profile built from the World alone (``admit``: as
    the controller admits, as `expected_starts`' ``admit_as_controller``)."""
    live = live_in_order(world)
    history = world.runtime_history
    queue = [
        Waiting(
            group.name,
            gang_demands(members, cluster, fixed=True),
            resolve_scopes(group.spec, cluster, {}, world, group),
            gang_runtime(group.spec, history, learned.runtime),
            admitted_runtime(group, history) if admit else None,
            claimed_from(group) if admit else None,
        )
        for group, members in live
        if group.status in GROUP_WAITING
    ]
    profile = profile_of(cluster, live, now, None, history, learned.end)
    return plan_queue(cluster, profile, queue).starts


@settings(max_examples=40, deadline=None)
@given(
    running=st.lists(
        st.tuples(st.integers(0, 3), st.sampled_from([4, 8]), st.integers(10, 90)), max_size=4
    ),
    waiting=st.lists(
        st.tuples(st.sampled_from([4, 8, 16]), st.integers(0, 2), st.booleans(), st.booleans()),
        min_size=1,
        max_size=6,
    ),
    samples=st.lists(st.integers(5, 120), max_size=6),
)
def test_plans_over_inputs_built_once_are_the_plans_made_from_the_world(
    running: list[tuple[int, int, int]],
    waiting: list[tuple[int, int, bool, bool]],
    samples: list[int],
) -> None:
    rig = Rig(a_cluster(blocks=1, racks=2, nodes=2))
    used = [0, 0, 0, 0]
    for i, (at, gpus, minutes) in enumerate(running):
        if used[at] + gpus > 8:
            continue
        used[at] += gpus
        name = f"run{i}"
        rig.submit(
            a_group(name).with_member("w", gpu=gpus, tasks=1, max_runtime=f"{minutes}m").build()
        )
        node = f"b0-r{at // 2}-n{at % 2}"
        rig.controller.apply_decisions([PlaceGroup(name, {"w": (Assignment(0, node),)})])
        rig.start_all(name)
    for length in samples:
        rig.controller.world.runtime_history.learn("alice run0 w", length * 60 * 10**9)
    for i, (gpus, priority, packed, two) in enumerate(waiting):
        group = a_group(f"wait{i}", owner="bob").atomic().with_priority(priority)
        if packed:
            group = group.with_topology(RACK_PACK)
        group = group.with_member("w", gpu=min(gpus, 8), tasks=max(1, gpus // 8))
        if two:
            group = group.with_member("ps", gpu=0, cpu=2, tasks=1)
        rig.submit(group.build())
    world = rig.controller.world
    now = rig.clock.now_ns
    live = live_in_order(world)
    inputs = queue_inputs(rig.cluster, world, None, live)
    assert [g.name for g, _, _ in inputs.waiting] == [
        g.name for g, _ in live if g.status in GROUP_WAITING
    ]
    for level in (0.1, 0.5, 0.9, None):
        learned = (
            LearnedRuntimes(RuntimeHistory(), 0.5, live, now, unlimited=False, grid=False)
            if level is None
            else LearnedRuntimes(world.runtime_history, level, live, now)
        )
        admit = level is not None  # as `estimate_starts` plans each level
        shared = expected_starts(
            rig.cluster, world, now, learned=learned, admit_as_controller=admit, inputs=inputs
        )
        alone = _from_scratch(rig.cluster, world, now, learned, admit)
        assert shared == alone
        assert list(shared) == list(alone)
        later = sum(1 for s in shared.values() if s.start_ns not in (None, now))
        PATHS["some planned later" if later else "all now or never"] += 1
    PATHS["scoped" if any(p for _, _, p, _ in waiting) else "unscoped"] += 1
    PATHS["running" if any(used) else "nothing running"] += 1


@pytest.fixture(scope="module", autouse=True)
def _paths() -> Iterator[None]:
    yield
    print(f"\nqueue inputs paths taken: {dict(sorted(PATHS.items()))}")
