"""`check_world` catches each rule it owns in the state it is about, names the rule, the
group, the member and what is wrong, and passes every state a real run reaches.

Each row takes a real World (a group waiting, holding, placed, running or ended), breaks
one field the way a fold bug would, and expects the exact violation; the clean worlds
are checked too, so a check that fires on sound state fails here.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from costart.domain.capacity import Capacity
from costart.domain.decisions import HoldCapacity, PlaceGroup
from costart.domain.errors import InvariantViolation
from costart.domain.events import Assignment
from costart.domain.invariants import check_world
from costart.domain.state_copy import copy_world
from costart.domain.states import GroupState, MemberState, TaskState
from costart.domain.world import World
from tests.builders import (
    USER,
    a_group,
    full_placement,
    new_controller,
    ready,
    running_controller,
    start,
    succeed,
)

SPEC = (
    a_group("inv")
    .with_member("a", tasks=2, claims=("gpus",))
    .with_member("b", replicas=2, claims=("gpus",))
    .with_rule("restart-member", members=("a",), reasons=("error",), max_restarts=2)
    .with_rule("restart-member", members=("a", "b"), reasons=("oom",), max_restarts=1)
    .with_rule("tolerate", members=("b",), reasons=("error",), max_restarts=7)
    .build()
)


def waiting() -> World:
    c = new_controller()
    c.submit(SPEC)
    return copy_world(c.world)


def holding() -> World:
    c = new_controller()
    c.submit(SPEC)
    c.apply_decisions([HoldCapacity("inv", {"a": (Assignment(0, "r1-n001"),)})])
    assert c.group("inv").status == "RESERVING"
    return copy_world(c.world)


def placed() -> World:
    c = new_controller()
    c.submit(SPEC)
    c.apply_decisions([full_placement(SPEC)])
    return copy_world(c.world)


def ready_world() -> World:
    c = new_controller()
    c.submit(SPEC)
    c.apply_decisions([full_placement(SPEC)])
    ready(c, "inv/a", "gpus")
    return copy_world(c.world)


def running() -> World:
    return copy_world(running_controller(SPEC).world)


# Two jobs: one succeeds while the other runs on (the group does not end).
TWO_JOBS = a_group("inv").with_member("a", tasks=2, claims=("gpus",)).with_member("c").build()


def succeeded_job() -> World:
    c = running_controller(TWO_JOBS)
    succeed(c, "inv/a")
    assert c.group("inv").status == "RUNNING"
    return copy_world(c.world)


def ended() -> World:
    c = running_controller(SPEC)
    c.cancel("inv", actor=USER)
    return copy_world(c.world)


def group(world: World) -> GroupState:
    (only,) = world.groups.values()
    return only


def member(world: World, name: str) -> MemberState:
    return world.member_named(group(world), name)


def test_every_state_a_run_reaches_passes():
    for world in (
        waiting(),
        holding(),
        placed(),
        ready_world(),
        running(),
        succeeded_job(),
        ended(),
    ):
        check_world(world)
        check_world(world, {f"r1-n{i:03d}": Capacity(gpu=1) for i in range(1, 5)})
    c = new_controller()
    c.submit(SPEC)
    c.apply_decisions([full_placement(SPEC)])
    ready(c, "inv/a", "gpus")
    ready(c, "inv/b", "gpus")
    start(c, "inv/a")
    check_world(c.world)


def at_budget() -> World:
    world = running()
    member(world, "a").restarts = 2  # the larger of its two rules' budgets
    member(world, "b").restarts = 1  # the oom rule's: a tolerate rule grants no restarts
    group(world).group_restarts = 0
    return world


def test_restarts_up_to_the_largest_budget_of_the_rules_covering_a_member_pass():
    check_world(at_budget())


def task(world: World, name: str, index: int) -> TaskState:
    found = member(world, name).task(index)
    assert found is not None
    return found


def set_task(world: World, name: str, index: int, **fields: object) -> None:
    m = member(world, name)
    m.tasks = [
        TaskState(**({f: getattr(t, f) for f in t.__struct_fields__} | fields))
        if t.index == index
        else t
        for t in m.tasks
    ]


Break = Callable[[World], None]


def _running_group_without_barrier(w: World) -> None:
    group(w).barrier_released_attempt = 0


def _placed_group_with_barrier(w: World) -> None:
    group(w).barrier_released_attempt = 1


def _pending_group_with_barrier(w: World) -> None:
    group(w).barrier_released_attempt = 1


def _reserving_group_with_barrier(w: World) -> None:
    group(w).barrier_released_attempt = 1


def _running_member_in_placed_group(w: World) -> None:
    member(w, "b").status = "RUNNING"


def _terminal_group_holding(w: World) -> None:
    member(w, "b").held.append(Assignment(0, "r1-n001"))


def _terminal_group_placed(w: World) -> None:
    member(w, "a").assignments.append(Assignment(0, "r1-n001"))


def _pending_group_holding(w: World) -> None:
    member(w, "a").held.append(Assignment(0, "r1-n001"))


def _pending_group_placed(w: World) -> None:
    member(w, "b").assignments.append(Assignment(0, "r1-n001"))


def _succeeded_member_holding(w: World) -> None:
    member(w, "a").held.append(Assignment(0, "r1-n001"))


def _stopped_member_holding(w: World) -> None:
    m = member(w, "b")
    m.status = "STOPPED"
    m.held.append(Assignment(0, "r1-n001"))


def _failed_member_placed(w: World) -> None:
    m = member(w, "b")
    m.status = "FAILED"


def _failed_member_holding(w: World) -> None:
    m = member(w, "b")
    m.status = "FAILED"
    m.assignments.clear()
    m.tasks = []
    m.held.append(Assignment(0, "r1-n001"))


def _reserving_with_placement(w: World) -> None:
    member(w, "b").assignments.append(Assignment(0, "r1-n009"))


def _task_from_the_future(w: World) -> None:
    set_task(w, "a", 1, attempt=2)


def _task_of_no_attempt(w: World) -> None:
    set_task(w, "a", 0, attempt=0)


def _live_task_elsewhere(w: World) -> None:
    set_task(w, "b", 1, node="r1-n099")


def _unplaced_running_task(w: World) -> None:
    m = member(w, "b")
    m.assignments = [a for a in m.assignments if a.index != 0]


def _running_task_in_placed_member(w: World) -> None:
    set_task(w, "a", 1, status="RUNNING")


def _placed_task_without_task(w: World) -> None:
    m = member(w, "a")
    m.tasks = [t for t in m.tasks if t.index != 1]


def _placed_task_ended(w: World) -> None:
    set_task(w, "b", 0, status="FAILED")


def _placed_task_on_other_node(w: World) -> None:
    m = member(w, "a")
    m.assignments = [Assignment(1, "r1-n050") if a.index == 1 else a for a in m.assignments]


def _ready_with_claim_pending(w: World) -> None:
    member(w, "a").claims = {**member(w, "a").claims, "gpus": "PENDING"}


def _ready_with_task_claim_pending(w: World) -> None:
    set_task(w, "a", 0, claims={"dev": "PENDING"})


def _succeeded_with_a_task_failed(w: World) -> None:
    set_task(w, "a", 1, status="FAILED")


def _succeeded_missing_a_task(w: World) -> None:
    m = member(w, "a")
    m.tasks = m.tasks[:1]
    m.assignments = m.assignments[:1]


def _group_over_budget(w: World) -> None:
    group(w).group_restarts = 1


def _member_over_budget(w: World) -> None:
    member(w, "a").restarts = 3


def _member_over_oom_budget(w: World) -> None:
    member(w, "b").restarts = 2


BROKEN = [
    (
        running,
        _running_group_without_barrier,
        "#1 all-or-nothing",
        None,
        "running without a barrier release this attempt",
    ),
    (
        placed,
        _placed_group_with_barrier,
        "#2 barrier once per attempt",
        None,
        "barrier released before placement",
    ),
    (
        waiting,
        _pending_group_with_barrier,
        "#2 barrier once per attempt",
        None,
        "barrier released before placement",
    ),
    (
        holding,
        _reserving_group_with_barrier,
        "#2 barrier once per attempt",
        None,
        "barrier released before placement",
    ),
    (
        placed,
        _running_member_in_placed_group,
        "#1 all-or-nothing",
        "b",
        "RUNNING while group is PLACED",
    ),
    (
        ended,
        _terminal_group_holding,
        "#7 terminal groups hold nothing",
        "b",
        "still holds capacity",
    ),
    (ended, _terminal_group_placed, "#7 terminal groups hold nothing", "a", "still holds capacity"),
    (
        waiting,
        _pending_group_holding,
        "#4 no leaked holds",
        "a",
        "holds capacity while the group is PENDING",
    ),
    (
        waiting,
        _pending_group_placed,
        "#4 no leaked holds",
        "b",
        "holds capacity while the group is PENDING",
    ),
    (
        succeeded_job,
        _succeeded_member_holding,
        "#4 no leaked holds",
        "a",
        "SUCCEEDED but holds capacity",
    ),
    (running, _stopped_member_holding, "#4 no leaked holds", "b", "STOPPED but holds capacity"),
    (running, _failed_member_placed, "#4 no leaked holds", "b", "FAILED but holds capacity"),
    (running, _failed_member_holding, "#4 no leaked holds", "b", "FAILED but holds capacity"),
    (
        holding,
        _reserving_with_placement,
        "#4 no leaked holds",
        "b",
        "placed tasks during a reservation",
    ),
    (placed, _task_from_the_future, "tasks", "a", "task 1 has attempt 2"),
    (placed, _task_of_no_attempt, "tasks", "a", "task 0 has attempt 0"),
    (running, _live_task_elsewhere, "tasks", "b", "task 1 is RUNNING but not placed"),
    (running, _unplaced_running_task, "tasks", "b", "task 0 is RUNNING but not placed"),
    (
        placed,
        _running_task_in_placed_member,
        "#1 all-or-nothing",
        "a",
        "task 1 runs in a PLACED member",
    ),
    (placed, _placed_task_without_task, "tasks", "a", "placed task 1 on r1-n002 has no live task"),
    (running, _placed_task_ended, "tasks", "b", "placed task 0 on r1-n003 has no live task"),
    (placed, _placed_task_on_other_node, "tasks", "a", "task 1 is PLACED but not placed"),
    (
        ready_world,
        _ready_with_claim_pending,
        "#1 all-or-nothing",
        "a",
        "READY with a claim not READY",
    ),
    (
        ready_world,
        _ready_with_task_claim_pending,
        "#1 all-or-nothing",
        "a",
        "READY with a claim not READY",
    ),
    (
        succeeded_job,
        _succeeded_with_a_task_failed,
        "tasks",
        "a",
        "SUCCEEDED before every task of its placement",
    ),
    (
        succeeded_job,
        _succeeded_missing_a_task,
        "tasks",
        "a",
        "SUCCEEDED before every task of its placement",
    ),
    (running, _group_over_budget, "#6 restart budgets", None, "1 group restarts > budget 0"),
    (at_budget, _member_over_budget, "#6 restart budgets", "a", "3 restarts > 2"),
    (at_budget, _member_over_oom_budget, "#6 restart budgets", "b", "2 restarts > 1"),
]


@pytest.mark.parametrize(
    ("world_of", "breaking", "rule", "who", "detail"),
    BROKEN,
    ids=[b[1].__name__.strip("_") for b in BROKEN],
)
def test_each_broken_state_is_caught_naming_rule_group_member_and_detail(
    world_of: Callable[[], World], breaking: Break, rule: str, who: str | None, detail: str
):
    world = world_of()
    breaking(world)
    with pytest.raises(InvariantViolation) as caught:
        check_world(world)
    assert (caught.value.rule, caught.value.group, caught.value.member, caught.value.detail) == (
        rule,
        "inv",
        who,
        detail,
    )


def test_a_member_without_a_restart_rule_has_no_budget():
    spec = a_group("plain").with_member("a").with_member("b").build()
    world = copy_world(running_controller(spec).world)
    (g,) = world.groups.values()
    world.member_named(g, "b").restarts = 1
    with pytest.raises(InvariantViolation) as caught:
        check_world(world)
    assert (caught.value.member, caught.value.detail) == ("b", "1 restarts > 0")


def test_a_rule_for_other_members_grants_no_budget():
    spec = (
        a_group("other")
        .with_member("a")
        .with_member("b")
        .with_rule("restart-member", members=("a",), reasons=("error",), max_restarts=5)
        .build()
    )
    world = copy_world(running_controller(spec).world)
    (g,) = world.groups.values()
    world.member_named(g, "a").restarts = 5
    check_world(world)
    world.member_named(g, "b").restarts = 1
    with pytest.raises(InvariantViolation) as caught:
        check_world(world)
    assert (caught.value.member, caught.value.detail) == ("b", "1 restarts > 0")


def test_a_rule_naming_no_members_covers_every_member():
    spec = (
        a_group("every")
        .with_member("a")
        .with_member("b")
        .with_rule("restart-member", reasons=("error",), max_restarts=3)
        .build()
    )
    world = copy_world(running_controller(spec).world)
    (g,) = world.groups.values()
    world.member_named(g, "b").restarts = 3
    check_world(world)


# Capacity (#3): the running world uses r1-n001..r1-n004, one task of gpu 1 on each.
NODES = {f"r1-n{i:03d}": Capacity(gpu=1) for i in range(1, 5)}


def test_holds_and_placements_exactly_at_capacity_pass():
    check_world(running(), NODES)
    check_world(holding(), NODES)


@pytest.mark.parametrize(
    ("change", "detail"),
    [
        ({"r1-n002": Capacity(gpu=0)}, "node r1-n002 holds gpu 1/0, cpu 0/0, mem 0/0"),
        (
            {"r1-n001": Capacity(gpu=0, cpu=9, mem_gb=9)},
            "node r1-n001 holds gpu 1/0, cpu 0/9, mem 0/9",
        ),
    ],
)
def test_a_node_over_its_gpus_is_caught_naming_the_node_and_its_totals(change, detail):
    with pytest.raises(InvariantViolation) as caught:
        check_world(running(), NODES | change)
    assert caught.value.rule == "#3 no overcommit"
    assert caught.value.detail == detail


def test_cpu_and_memory_count_as_gpus_do():
    spec = a_group("cm").with_member("a", gpu=0, cpu=4, mem_gb=8, tasks=2).build()
    world = copy_world(running_controller(spec).world)
    fits = {"r1-n001": Capacity(cpu=4, mem_gb=8), "r1-n002": Capacity(cpu=4, mem_gb=8)}
    check_world(world, fits)
    for node, cap, detail in [
        ("r1-n001", Capacity(cpu=3, mem_gb=8), "node r1-n001 holds gpu 0/0, cpu 4/3, mem 8/8"),
        ("r1-n002", Capacity(cpu=4, mem_gb=7), "node r1-n002 holds gpu 0/0, cpu 4/4, mem 8/7"),
    ]:
        with pytest.raises(InvariantViolation) as caught:
            check_world(world, fits | {node: cap})
        assert (caught.value.member, caught.value.detail) == ("a", detail)


def test_two_members_on_one_node_are_summed_and_the_last_holder_is_named():
    c = new_controller()
    c.submit(SPEC)
    shared = {
        "a": (Assignment(0, "r1-n001"), Assignment(1, "r1-n002")),
        "b": (Assignment(0, "r1-n001"), Assignment(1, "r1-n003")),
    }
    c.apply_decisions([PlaceGroup("inv", shared)])
    with pytest.raises(InvariantViolation) as caught:
        check_world(c.world, NODES)
    assert (caught.value.member, caught.value.detail) == (
        "b",
        "node r1-n001 holds gpu 2/1, cpu 0/0, mem 0/0",
    )
    check_world(c.world, NODES | {"r1-n001": Capacity(gpu=2)})


def test_holds_count_against_capacity_as_placements_do():
    world = holding()
    with pytest.raises(InvariantViolation) as caught:
        check_world(world, {"r1-n001": Capacity(gpu=0)})
    assert (caught.value.member, caught.value.detail) == (
        "a",
        "node r1-n001 holds gpu 1/0, cpu 0/0, mem 0/0",
    )


def test_a_node_the_capacities_do_not_know_is_caught():
    with pytest.raises(InvariantViolation) as caught:
        check_world(running(), {k: v for k, v in NODES.items() if k != "r1-n003"})
    assert (caught.value.rule, caught.value.member, caught.value.detail) == (
        "#3 no overcommit",
        "b",
        "uses unknown node r1-n003",
    )


def test_nodes_are_checked_in_name_order_and_groups_in_submission_order():
    world = running()
    with pytest.raises(InvariantViolation) as caught:
        check_world(world, {n: Capacity(gpu=0) for n in NODES})
    assert caught.value.detail.startswith("node r1-n001 ")
    c = new_controller()
    for name in ("zz", "aa"):
        c.submit(a_group(name).with_member("m").build())
    broken = copy_world(c.world)
    for g in broken.groups.values():
        broken.members_of(g)[0].held.append(Assignment(0, "n"))
    with pytest.raises(InvariantViolation) as first:
        check_world(broken)
    assert first.value.group == "zz"


def test_cpu_and_memory_of_two_tasks_on_one_node_are_summed():
    # Two tasks of 4 cpu / 8 GB each on one node: 8 cpu and 16 GB, over 6 and 12.
    spec = a_group("cm").with_member("a", gpu=0, cpu=4, mem_gb=8, tasks=2).build()
    c = new_controller()
    c.submit(spec)
    both = (Assignment(0, "r1-n001"), Assignment(1, "r1-n001"))
    c.apply_decisions([PlaceGroup("cm", {"a": both})])
    check_world(c.world, {"r1-n001": Capacity(cpu=8, mem_gb=16)})
    for cap, detail in [
        (Capacity(cpu=6, mem_gb=16), "node r1-n001 holds gpu 0/0, cpu 8/6, mem 16/16"),
        (Capacity(cpu=8, mem_gb=12), "node r1-n001 holds gpu 0/0, cpu 8/8, mem 16/12"),
    ]:
        with pytest.raises(InvariantViolation) as caught:
            check_world(c.world, {"r1-n001": cap})
        assert (caught.value.member, caught.value.detail) == ("a", detail)
