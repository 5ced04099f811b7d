"""`Controller.reconcile(host_view)`: after any divergence costart keeps live exactly the
tasks the host has (less what it tells the host to stop), every invariant holds, every
event it wrote says why, and a second reconcile writes nothing (docs/design.md §8)."""

from __future__ import annotations

from hypothesis import given, note, settings
from hypothesis import strategies as st

from costart.controller import Controller
from costart.domain.actors import Actor
from costart.domain.invariants import check_world
from costart.domain.reconcile import HostTask, HostView
from costart.domain.states import TASK_LIVE
from costart.eventlog.codec import canonical_encode
from costart.replay.rebuild import rebuild
from costart.replay.source import RecorderSource
from tests.builders import a_group, full_placement, new_controller, ready, start

HOST = Actor.host("slurmctld")
ACTIONS = ("restart-member", "restart-group", "tolerate", "fail-group")


def started(action: str, start_svc: bool = True) -> Controller:
    spec = (
        a_group()
        .with_member("trainer", tasks=2, claims=("gpus",))
        .with_member("svc", replicas=3, min_start=2, min_running=1)
        .with_failure(default=action, max_group_restarts=2)
        .with_rule("restart-member", members=("svc",), reasons=("error",), max_restarts=2)
        .build()
    )
    c = new_controller()
    c.submit(spec)
    c.apply_decisions([full_placement(spec)])
    ready(c, "g1/trainer", "gpus")
    start(c, "g1/trainer")
    if start_svc:
        start(c, "g1/svc")
    return c


def host_as_costart_sees_it(c: Controller) -> list[HostTask]:
    return [
        HostTask(f"g1/{m.name}", t.index, t.attempt, t.node, t.status == "RUNNING")
        for m in c.members("g1")
        for t in m.tasks
        if t.status in TASK_LIVE
    ]


def live_tasks(c: Controller) -> set[tuple[str, int, int, str, bool]]:
    return {
        (f"g1/{m.name}", t.index, t.attempt, t.node, t.status == "RUNNING")
        for g in c.groups()
        for m in c.members(g.name)
        for t in m.tasks
        if t.status in TASK_LIVE
    }


def test_a_job_cancelled_in_the_hosts_own_tools_is_ended_and_says_so():
    c = started("fail-group")
    view = HostView(tasks=tuple(t for t in host_as_costart_sees_it(c) if t.member != "g1/trainer"))
    done = c.reconcile(view, actor=HOST)
    assert c.group("g1").status == "FAILED"
    failed = next(e for e in done.events if type(e).__name__ == "MemberFailed")
    assert failed.reason == "preempted" and failed.actor == HOST
    assert failed.note == "reconciled: trainer task 0 of attempt 1 cancelled by the host"
    assert all(e.note and e.note.startswith("reconciled:") for e in done.events)
    assert {t.member for t in done.host_must_stop} == {"g1/svc"}  # torn down with the group
    assert c.reconcile(view, actor=HOST).events == ()


def test_a_node_lost_while_costart_was_down_fails_its_tasks_as_node_lost():
    c = started("tolerate")
    node = c.members("g1")[1].tasks[0].node
    tasks = tuple(t for t in host_as_costart_sees_it(c) if t.node != node)
    done = c.reconcile(HostView(tasks=tasks, nodes={node: "down"}), actor=HOST)
    names = [type(e).__name__ for e in done.events]
    assert names[0] == "NodeStatusChanged" and "MemberFailed" in names
    assert c.world.node_status == {node: "down"}
    assert all(e.reason == "node-lost" for e in done.events if type(e).__name__ == "MemberFailed")
    assert live_tasks(c) == {(t.member, t.task, t.attempt, t.node, t.running) for t in tasks}


def test_tasks_the_host_started_while_costart_was_down_are_started():
    c = started("tolerate", start_svc=False)
    tasks = tuple(msgspec_replace_running(t) for t in host_as_costart_sees_it(c))
    done = c.reconcile(HostView(tasks=tasks), actor=HOST)
    assert [type(e).__name__ for e in done.events] == [
        "MemberStarted",
        "TaskStarted",
        "TaskStarted",
    ]
    assert c.members("g1")[1].running_tasks == 3


def test_a_task_running_before_its_barrier_is_never_adopted():
    spec = a_group().with_member("a", tasks=2, claims=("c",)).build()
    c = new_controller()
    c.submit(spec)
    c.apply_decisions([full_placement(spec)])
    tasks = tuple(msgspec_replace_running(t) for t in host_as_costart_sees_it(c))
    done = c.reconcile(HostView(tasks=tasks), actor=HOST)
    assert done.events == () and done.host_must_stop == tasks
    assert c.members("g1")[0].status == "PLACED"


def test_a_replica_set_the_host_scaled_is_scaled_to_its_count():
    c = started("tolerate")
    tasks = tuple(
        t for t in host_as_costart_sees_it(c) if not (t.member == "g1/svc" and t.task == 2)
    )
    done = c.reconcile(HostView(tasks=tasks, replicas={"g1/svc": 2}), actor=HOST)
    assert [type(e).__name__ for e in done.events] == ["MemberScaled"]
    assert done.events[0].note == "reconciled: scaled to 2 by the host"
    assert c.members("g1")[1].desired == 2


def msgspec_replace_running(task: HostTask) -> HostTask:
    return HostTask(task.member, task.task, task.attempt, task.node, True)


divergences = st.fixed_dictionaries(
    {
        "action": st.sampled_from(ACTIONS),
        "start_svc": st.booleans(),
        # per live task: keep, drop (cancelled), stop (not running), start, move node,
        # or name another attempt
        "fates": st.lists(
            st.sampled_from(["keep", "keep", "drop", "stop", "run", "move", "attempt"]),
            min_size=5,
            max_size=5,
        ),
        "extra": st.lists(
            st.tuples(st.sampled_from(["g1/trainer", "g1/svc", "g9/x"]), st.integers(0, 4)),
            max_size=2,
        ),
        "down": st.lists(st.integers(0, 4), max_size=2),
        "replicas": st.one_of(st.none(), st.integers(1, 4)),
    }
)


@settings(max_examples=80, deadline=None)
@given(divergences)
def test_after_any_divergence_reconcile_brings_costart_to_the_hosts_view(d):
    c = started(d["action"], d["start_svc"])
    ours = host_as_costart_sees_it(c)
    tasks: list[HostTask] = []
    for task, fate in zip(ours, d["fates"], strict=False):
        if fate == "drop":
            continue
        changed = {
            "stop": HostTask(task.member, task.task, task.attempt, task.node, False),
            "run": msgspec_replace_running(task),
            "move": HostTask(task.member, task.task, task.attempt, "elsewhere", task.running),
            "attempt": HostTask(task.member, task.task, task.attempt + 1, task.node, task.running),
        }.get(fate, task)
        tasks.append(changed)
    for member, index in d["extra"]:
        if (member, index) not in {(t.member, t.task) for t in tasks}:
            tasks.append(HostTask(member, index, 1, "stray-node", True))
    nodes = {ours[i % len(ours)].node: "down" for i in d["down"]}
    replicas = {} if d["replicas"] is None else {"g1/svc": d["replicas"]}
    view = HostView(tasks=tuple(tasks), nodes=nodes, replicas=replicas)
    note(f"host view: {view}")

    done = c.reconcile(view, actor=HOST)
    note(f"wrote {[type(e).__name__ for e in done.events]}; stop {done.host_must_stop}")

    check_world(c.world)
    accepted = {t for t in view.tasks if t not in done.host_must_stop}
    assert live_tasks(c) == {(t.member, t.task, t.attempt, t.node, t.running) for t in accepted}
    assert all(e.actor == HOST and e.note and e.note.startswith("reconciled") for e in done.events)
    assert {n: s for n, s in c.world.node_status.items()} == nodes
    again = c.reconcile(view, actor=HOST)
    assert again.events == () and again.host_must_stop == done.host_must_stop
    assert canonical_encode(rebuild(RecorderSource(c.recorder))) == canonical_encode(c.world)
