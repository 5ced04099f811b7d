"""`reconcile_group` and `HostView` directly on a unit: the exact notes and reasons each
divergence is recorded with, the host view's limits, and what the host is told to stop
(the controller's own path applies node losses first, so some branches are reached only
here)."""

from __future__ import annotations

import pytest

from costart.domain import limits
from costart.domain.actors import Actor
from costart.domain.aggregates import GroupUnit
from costart.domain.reconcile import HostTask, HostView, must_stop, reconcile_group
from costart.domain.states import TASK_LIVE
from tests.builders import a_group, full_placement, new_controller, ready, start

AT = 7_000


def running(action: str = "tolerate", start_svc: bool = True):
    spec = (
        a_group()
        .with_member("trainer", tasks=2, claims=("gpus",))
        .with_member("svc", replicas=3, min_start=2, min_running=1)
        .with_failure(default=action, max_group_restarts=2)
        .build()
    )
    c = new_controller()
    c.submit(spec)
    c.apply_decisions([full_placement(spec)])
    ready(c, "g1/trainer", "gpus")
    start(c, "g1/trainer")
    if start_svc:
        start(c, "g1/svc")
    group = c.world.group_named("g1")
    return c, GroupUnit(group, c.world.members_of(group), actor=Actor.host("h"))


def host_tasks(c, running_too: bool = False) -> dict[tuple[str, int], HostTask]:
    return {
        (m.name, t.index): HostTask(
            f"g1/{m.name}", t.index, t.attempt, t.node, running_too or t.status == "RUNNING"
        )
        for m in c.members("g1")
        for t in m.tasks
        if t.status in TASK_LIVE
    }


def notes_and_reasons(unit: GroupUnit) -> list[tuple[str, str | None, str | None]]:
    return [(type(e).__name__, e.note, getattr(e, "reason", None)) for e in unit.pending_events]


def test_a_task_on_a_node_down_fails_as_node_lost_and_one_cancelled_as_preempted():
    c, unit = running()
    host = host_tasks(c)
    node = host.pop(("svc", 0)).node
    del host[("svc", 1)]
    reconcile_group(unit, host, {}, frozenset({node}), AT)
    failed = [(n, note, why) for n, note, why in notes_and_reasons(unit) if n == "MemberFailed"]
    assert failed == [
        ("MemberFailed", "reconciled: svc task 0 of attempt 1 cancelled by the host", "node-lost"),
        ("MemberFailed", "reconciled: svc task 1 of attempt 1 cancelled by the host", "preempted"),
    ]
    assert [e.index for e in unit.pending_events if type(e).__name__ == "MemberFailed"] == [0, 1]
    assert all(
        e.at_ns == AT and e.attempt == 1 for e in unit.pending_events if hasattr(e, "attempt")
    )


def test_a_task_the_host_stopped_is_stopped_on_the_host():
    c, unit = running()
    host = host_tasks(c)
    node = host[("trainer", 1)].node
    host[("trainer", 1)] = HostTask("g1/trainer", 1, 1, node, False)
    reconcile_group(unit, host, {}, frozenset(), AT)
    assert notes_and_reasons(unit)[0] == (
        "MemberFailed",
        "reconciled: trainer task 1 of attempt 1 stopped on the host",
        "preempted",
    )


def test_tasks_the_host_started_are_started_saying_so():
    c, unit = running(start_svc=False)
    reconcile_group(unit, host_tasks(c, running_too=True), {}, frozenset(), AT)
    assert [(n, note) for n, note, _ in notes_and_reasons(unit)] == [
        ("MemberStarted", "reconciled: running on the host"),
        ("TaskStarted", "reconciled: running on the host"),
        ("TaskStarted", "reconciled: running on the host"),
    ]


def test_before_the_start_a_missing_task_releases_the_group_without_counting_an_attempt():
    spec = a_group().with_member("a", tasks=2, claims=("c",)).with_placement(max_attempts=1).build()
    c = new_controller()
    c.submit(spec)
    c.apply_decisions([full_placement(spec)])
    group = c.world.group_named("g1")
    unit = GroupUnit(group, c.world.members_of(group))
    host = host_tasks(c)
    del host[("a", 1)]
    reconcile_group(unit, host, {}, frozenset(), AT)
    released = [e for e in unit.pending_events if type(e).__name__ == "PlacementReleased"]
    assert [(e.reason, e.at_ns) for e in released] == [
        ("reconciled: a task 1 of attempt 1 cancelled by the host", AT)
    ]
    assert unit.group.state.status == "PENDING"  # max_attempts=1 not spent: not counted


def test_the_host_scales_a_set_within_its_floor_and_limit_only():
    c, unit = running()
    reconcile_group(unit, host_tasks(c), {"svc": 1}, frozenset(), AT)
    assert [(n, note) for n, note, _ in notes_and_reasons(unit)][:1] == [
        ("MemberScaled", "reconciled: scaled to 1 by the host")
    ]
    c, unit = running()
    reconcile_group(unit, host_tasks(c), {"svc": limits.MAX_REPLICAS_PER_MEMBER}, frozenset(), AT)
    assert unit.member("svc").state.desired == limits.MAX_REPLICAS_PER_MEMBER
    c, unit = running()
    reconcile_group(unit, host_tasks(c), {"svc": 0, "trainer": 5}, frozenset(), AT)
    assert unit.pending_events == []


def test_a_host_view_is_bounded_and_names_a_task_once():
    task = HostTask("g1/a", 0, 1, "n1")
    many = tuple(HostTask("g1/a", i, 1, "n1") for i in range(limits.MAX_HOST_TASKS))
    assert len(HostView(tasks=many).tasks) == limits.MAX_HOST_TASKS
    with pytest.raises(ValueError) as caught:
        HostView(tasks=(*many, HostTask("g1/a", -1, 1, "n1")))
    assert str(caught.value) == f"a host view holds at most {limits.MAX_HOST_TASKS} tasks"
    with pytest.raises(ValueError) as caught:
        HostView(tasks=(task, HostTask("g1/b", 0, 1, "n1"), task))
    assert str(caught.value) == "host view names task 0 of g1/a twice"


def test_the_host_is_told_to_stop_every_task_costart_does_not_keep():
    c, unit = running()
    host = host_tasks(c)
    strangers = {
        ("zz", 0): HostTask("g1/zz", 0, 1, "n9"),
        ("zz", 1): HostTask("g1/zz", 1, 1, "n9"),
        ("svc", 7): HostTask("g1/svc", 7, 1, "n9"),
    }
    assert must_stop(unit, {**host, **strangers}) == [
        strangers[("svc", 7)],
        strangers[("zz", 0)],
        strangers[("zz", 1)],
    ]


def _placed_and_ready(spec):
    c = new_controller()
    c.submit(spec)
    c.apply_decisions([full_placement(spec)])
    for member in spec.members:
        for claim in member.claims:
            ready(c, f"g1/{member.name}", claim)
    group = c.world.group_named("g1")
    return c, GroupUnit(group, c.world.members_of(group), actor=Actor.host("h"))


def test_every_task_the_host_started_is_adopted_even_when_each_one_takes_a_step():
    # Each task is its own step and one more look finds nothing: the most steps there are.
    spec = a_group().with_member("a", tasks=3, claims=("c",)).build()
    c, unit = _placed_and_ready(spec)
    assert c.group("g1").barrier_released
    reconcile_group(unit, host_tasks(c, running_too=True), {}, frozenset(), AT)
    assert [n for n, _, _ in notes_and_reasons(unit)] == [
        "MemberStarted",
        "TaskStarted",
        "TaskStarted",
    ]
    assert [t.status for t in unit.member("a").state.tasks] == ["RUNNING"] * 3


def test_a_set_the_host_runs_below_its_floor_does_not_keep_the_next_set_from_scaling():
    spec = (
        a_group()
        .with_member("low", replicas=3, min_running=2)
        .with_member("svc", replicas=3, min_running=1)
        .with_failure(default="tolerate")
        .build()
    )
    c, unit = _placed_and_ready(spec)
    start(c, "g1/low")
    start(c, "g1/svc")
    group = c.world.group_named("g1")
    unit = GroupUnit(group, c.world.members_of(group), actor=Actor.host("h"))
    reconcile_group(unit, host_tasks(c), {"low": 1, "svc": 2}, frozenset(), AT)
    assert [(m.name, m.state.desired) for m in unit.members] == [("low", 3), ("svc", 2)]
