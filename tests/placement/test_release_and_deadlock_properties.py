"""Properties over time: holds never leak through releases, cancels, timeouts and node
loss; and competing large reservations never deadlock while running work finishes at
random times (docs/design.md §3.4 #3, #4, #5).

Example counts come from the hypothesis profile (``tests/conftest.py``): bounded in CI,
larger with ``COSTART_PROFILE=slow``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hypothesis import event, given, note
from hypothesis import strategies as st

from costart.domain.errors import SpecError
from costart.domain.states import GroupState
from costart.placement import session_order
from tests.builders import HOST, SECOND_NS, USER

from .builders import Rig, a_cluster, a_group

SESSION_S = 20
WAITING = ("PENDING", "RESERVING")


def _reserve(builder: Any, timeout: str) -> Any:
    builder = builder.reserve(timeout=timeout, backoff="20s")
    builder.doc["placement"]["backoff_max"] = "1m"
    return builder


def _holds_nothing(rig: Rig, group: str) -> bool:
    return all(not m.held and not m.assignments for m in rig.controller.members(group))


def _check_all_or_nothing(rig: Rig) -> None:
    for group in rig.controller.groups():
        for member in rig.controller.members(group.name):
            if group.status in WAITING:
                assert not member.assignments, f"{group.name}/{member.name} placed while waiting"
            if group.status == "PENDING" or group.is_terminal:
                assert not member.held, f"{group.name}/{member.name} holds while {group.status}"


# --- no leaked holds ------------------------------------------------------------------

member_st = st.fixed_dictionaries(
    {
        "gpu": st.sampled_from([1, 2, 4, 8]),
        "tasks": st.integers(1, 4),
        "pack": st.sampled_from([None, "rack", "block"]),
    }
)
group_st = st.fixed_dictionaries(
    {
        "reserve": st.booleans(),
        "priority": st.integers(0, 2),
        "members": st.lists(member_st, min_size=1, max_size=3),
    }
)
action_st = st.one_of(
    st.tuples(st.just("cancel"), st.integers(0, 7)),
    st.tuples(st.just("finish"), st.integers(0, 7)),
    st.tuples(st.sampled_from(["down", "drained", "up"]), st.integers(0, 15)),
    st.tuples(st.just("wait"), st.sampled_from([5, 60, 200])),
)


@given(
    st.tuples(st.integers(1, 2), st.integers(1, 2), st.integers(2, 4)),
    st.lists(group_st, min_size=1, max_size=8),
    st.lists(action_st, max_size=12),
)
def test_no_group_holds_anything_after_a_release_cancel_or_end_and_all_capacity_returns(
    shape: tuple[int, int, int], workload: list[dict[str, Any]], actions: list[tuple[str, int]]
) -> None:
    rig = Rig(a_cluster(*shape))
    names = []
    for i, doc in enumerate(workload):
        builder = a_group(f"g{i}").with_priority(doc["priority"])
        builder = _reserve(builder, "2m") if doc["reserve"] else builder.atomic()
        for j, m in enumerate(doc["members"]):
            topology = {"level": m["pack"], "required": True} if m["pack"] else None
            builder = builder.with_member(
                f"m{j}", gpu=m["gpu"], tasks=m["tasks"], topology=topology
            )
        try:
            rig.submit(builder.build())
            names.append(f"g{i}")
        except SpecError:
            pass
    nodes = [n.name for n in rig.cluster.nodes]
    rig.session()
    for action, arg in actions:
        note(f"{action} {arg}")
        if action in ("cancel", "finish") and names:
            name = names[arg % len(names)]
            if rig.controller.group(name).is_terminal:
                continue
            if action == "cancel":
                rig.controller.cancel(name, actor=USER)
            elif rig.status(name) == "RUNNING":
                rig.finish(name)
            assert rig.controller.group(name).status not in ("CANCELLED",) or _holds_nothing(
                rig, name
            )
        elif action in ("down", "drained", "up"):
            rig.controller.set_node_status(nodes[arg % len(nodes)], action, actor=HOST)  # type: ignore[arg-type]
        rig.session(advance_s=arg if action == "wait" else 1)
        _check_all_or_nothing(rig)
        for group in rig.controller.groups():
            if group.is_terminal or group.status == "PENDING":
                assert _holds_nothing(rig, group.name), f"{group.name} leaked in {group.status}"
    # Everything ends and every node is up: the whole cluster must be free again.
    for name in names:
        if not rig.controller.group(name).is_terminal:
            rig.controller.cancel(name, actor=USER)
    for node in nodes:
        rig.controller.set_node_status(node, "up", actor=HOST)
    everything = len(nodes)
    rig.submit(a_group("all").atomic().with_member("w", gpu=8, tasks=everything).build())
    rig.session()
    assert rig.status("all") == "RUNNING", rig.controller.group("all").pend_reason


# --- deadlock freedom -----------------------------------------------------------------


@dataclass
class Model:
    """Running work with finish times, competing gangs with run lengths (in sessions)."""

    background: dict[str, int]
    gangs: dict[str, int]
    long_timeout: dict[str, bool]


@st.composite
def competition(draw: st.DrawFn) -> tuple[tuple[int, int, int], Model, Rig]:
    shape = draw(st.tuples(st.integers(1, 2), st.integers(1, 2), st.integers(2, 4)))
    rig = Rig(a_cluster(*shape))
    nodes = [n.name for n in rig.cluster.nodes]
    background: dict[str, int] = {}
    free = dict.fromkeys(nodes, 8)
    for k in range(draw(st.integers(1, 4))):
        use = {}
        for node in nodes:
            gpus = draw(st.integers(0, free[node]))
            if gpus:
                use[node] = gpus
                free[node] -= gpus
        if use:
            rig.occupy(f"bg{k}", use)
            background[f"bg{k}"] = draw(st.integers(1, 12))
    gangs: dict[str, int] = {}
    long_timeout: dict[str, bool] = {}
    for k in range(draw(st.integers(2, 5))):
        name = f"gang{k}"
        long_timeout[name] = draw(st.booleans())
        tasks = draw(st.integers((len(nodes) + 1) // 2, len(nodes)))
        builder = _reserve(a_group(name), "1h" if long_timeout[name] else "1m")
        rig.submit(
            builder.with_priority(draw(st.integers(0, 2)))
            .with_member("w", gpu=8, tasks=tasks)
            .build()
        )
        gangs[name] = draw(st.integers(1, 4))
    note(f"cluster {shape}, background {background}, gangs {gangs}, long {long_timeout}")
    return shape, Model(background, gangs, long_timeout), rig


def _head(rig: Rig, now_ns: int, gangs: dict[str, int]) -> GroupState | None:
    """The first waiting gang in the global order at ``now_ns`` that is neither backing
    off nor about to time out (the session's tick comes first)."""
    waiting = [rig.controller.group(n) for n in gangs if rig.status(n) in WAITING]
    ready = [
        g
        for g in waiting
        if (g.status == "PENDING" and g.retry_at_ns <= now_ns)
        or (g.status == "RESERVING" and now_ns < (g.reservation_deadline_ns or 0))
    ]
    order = session_order(ready)
    return order[0] if order else None


@given(competition())
def test_competing_reservations_never_deadlock_and_the_head_completes_once_work_ends(
    drawn: tuple[tuple[int, int, int], Model, Rig],
) -> None:
    _, model, rig = drawn
    finish_at: dict[str, int] = dict(model.background)
    ran: set[str] = set()
    horizon = max(model.background.values(), default=0) + 8 * len(model.gangs) + 8
    for session in range(1, horizon + 1):
        for name, at in sorted(finish_at.items()):
            if at == session and rig.status(name) == "RUNNING":
                rig.finish(name)
        idle = all(
            rig.status(n) not in ("RUNNING", "PLACED") for n in (*model.background, *model.gangs)
        )
        now_ns = rig.clock.now_ns + SESSION_S * SECOND_NS
        head = _head(rig, now_ns, model.gangs) if idle else None
        rig.session(advance_s=SESSION_S)
        _check_all_or_nothing(rig)
        for name in model.gangs:
            group = rig.controller.group(name)
            if group.status == "RESERVING":  # none waits past its deadline
                assert group.reservation_deadline_ns is not None
                assert rig.clock.now_ns < group.reservation_deadline_ns
            if group.status == "RUNNING" and name not in ran:
                ran.add(name)
                finish_at[name] = session + model.gangs[name]
        if head is not None:
            event("the head was checked on an idle cluster")
            note(f"session {session}: idle cluster, head {head.name}")
            assert rig.status(head.name) == "RUNNING", (
                f"{head.name} is the head on an idle cluster but is {rig.status(head.name)}: "
                f"{rig.controller.group(head.name).pend_reason}"
            )
        if ran == set(model.gangs):
            event("every gang ran")
            break
    assert ran == set(model.gangs), f"never ran: {sorted(set(model.gangs) - ran)}"
