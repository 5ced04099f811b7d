"""Properties of backfill into held capacity over random clusters and workloads (ADR 0045):
the same input gives the same decisions; no node is ever overcommitted, lent holds
included (`Rig.session` checks #3 with every node's capacity after each session);
nothing leaks; lending and taking back follow the global order; and competing
reservations still never deadlock while borrowers that never end on their own run in
their capacity (docs/design.md §3.4 #3-#5).
"""

from __future__ import annotations

from typing import Any

from hypothesis import assume, event, given, note
from hypothesis import strategies as st

from costart.domain import events as ev
from costart.domain.decisions import PlaceGroup
from costart.domain.errors import SpecError
from costart.domain.events import Assignment
from costart.domain.spec_types import GroupSpec
from costart.placement import session_order
from tests.builders import USER, start

from .builders import Rig, a_cluster, a_group
from .test_properties import PROPERTY
from .test_release_and_deadlock_properties import _check_all_or_nothing, _holds_nothing

MODES = ("atomic", "reserve", "reserve-backfill")
member_st = st.fixed_dictionaries(
    {
        "gpu": st.sampled_from([1, 2, 4, 8]),
        "tasks": st.integers(1, 3),
        "pack": st.sampled_from([None, "rack"]),
        "declares": st.sampled_from([None, "preemptible", "preemptible", "30s", "5m"]),
    }
)
group_st = st.fixed_dictionaries(
    {
        "mode": st.sampled_from((*MODES, "reserve-backfill")),
        "priority": st.integers(0, 2),
        "members": st.lists(member_st, min_size=1, max_size=2),
        "on_preempt": st.sampled_from(["fail-group", "restart-member", "restart-group"]),
    }
)
workload_st = st.lists(group_st, min_size=2, max_size=7)
cluster_st = st.tuples(st.integers(1, 2), st.integers(1, 2), st.integers(2, 3))


def _spec(i: int, doc: dict[str, Any]) -> GroupSpec:
    builder = a_group(f"g{i}").with_priority(doc["priority"])
    builder = builder.with_placement(mode=doc["mode"], timeout="3m", backoff="20s")
    builder.doc["placement"]["backoff_max"] = "1m"
    for j, m in enumerate(doc["members"]):
        topology = {"level": m["pack"], "required": True} if m["pack"] else None
        flags: dict[str, Any] = {}
        if m["declares"] == "preemptible":
            flags["preemptible"] = True
        elif m["declares"] is not None:
            flags["max_runtime"] = m["declares"]
        builder = builder.with_member(
            f"m{j}", gpu=m["gpu"], tasks=m["tasks"], topology=topology, **flags
        )
    rules = builder.doc.setdefault("failure", {}).setdefault("rules", [])
    rules.append({"reasons": ["preempted"], "action": doc["on_preempt"], "max_restarts": 0})
    return builder.build()


def _rig(shape: tuple[int, int, int], workload: list[dict[str, Any]]) -> tuple[Rig, list[str]]:
    rig = Rig(a_cluster(*shape))
    names = []
    for i, doc in enumerate(workload):
        try:
            rig.submit(_spec(i, doc))
            names.append(f"g{i}")
        except SpecError:
            pass
    return rig, names


def _check_order(rig: Rig, events: list[Any]) -> None:
    """Lending and taking back go down the global order only."""
    order = [g.name for g in session_order(rig.controller.groups())]
    names = {g.id: g.name for g in rig.controller.groups()}
    for e in events:
        note_text = e.note or ""
        for prefix in ("on loan from reservation ", "preempted for reservation "):
            if note_text.startswith(prefix):
                lender = note_text.removeprefix(prefix)
                assert order.index(lender) < order.index(names[e.group_id]), note_text
        if isinstance(e, ev.HoldLent):
            assert order.index(names[e.group_id]) < order.index(e.borrower)


def _run(rig: Rig, names: list[str], sessions: int) -> list[list[str]]:
    """Sessions 5s apart; running jobs are started, and finish after two sessions
    unless a limit or a preemption ends them first."""
    log: list[list[str]] = []
    running_since: dict[str, int] = {}
    for session in range(sessions):
        events = rig.session(advance_s=5)
        log.append([f"{type(e).__name__}:{e.note or ''}" for e in events])
        _check_order(rig, events)
        _check_all_or_nothing(rig)
        for name in names:
            group = rig.controller.group(name)
            if group.is_terminal or group.status == "PENDING":
                assert _holds_nothing(rig, name), f"{name} leaked in {group.status}"
            if group.status == "RUNNING":
                rig.start_all(name)
                since = running_since.setdefault(name, session)
                if session - since >= 2:
                    rig.finish(name)
            else:
                running_since.pop(name, None)
        if any(type(e) is ev.HoldLent for e in events):
            event("a hold was lent")
        if any(isinstance(e, ev.MemberFailed) and e.reason == "preempted" for e in events):
            event("a borrower was preempted")
    return log


@PROPERTY
@given(cluster_st, workload_st)
def test_backfill_is_deterministic_never_overcommits_and_leaks_nothing(
    shape: tuple[int, int, int], workload: list[dict[str, Any]]
) -> None:
    first, names = _rig(shape, workload)
    assume(len(names) > 1)
    second, _ = _rig(shape, workload)
    assert _run(first, names, 12) == _run(second, names, 12)
    # Everything ends: the whole cluster is free again.
    for name in names:
        if not first.controller.group(name).is_terminal:
            first.controller.cancel(name, actor=USER)
    first.submit(a_group("all").atomic().with_member("w", gpu=8, tasks=len(first.cluster)).build())
    first.session()
    assert first.status("all") == "RUNNING", first.controller.group("all").pend_reason


@st.composite
def competition(draw: st.DrawFn) -> tuple[Rig, dict[str, int], list[str]]:
    """Background work that ends, competing whole-node gangs (reserve or
    reserve-backfill), and preemptible borrowers that never end on their own."""
    shape = draw(st.tuples(st.integers(1, 2), st.integers(1, 2), st.integers(2, 3)))
    rig = Rig(a_cluster(*shape))
    nodes = [n.name for n in rig.cluster.nodes]
    background: dict[str, int] = {}
    for k, node in enumerate(nodes):
        gpus = draw(st.integers(0, 8))
        if gpus:
            rig.submit(a_group(f"bg{k}").with_member("w", gpu=gpus).build())
            placement = {"w": (Assignment(0, node),)}
            rig.controller.apply_decisions([PlaceGroup(f"bg{k}", placement)])
            start(rig.controller, f"bg{k}/w")
            background[f"bg{k}"] = draw(st.integers(1, 10))
    gangs: list[str] = []
    for k in range(draw(st.integers(1, 3))):
        mode = draw(st.sampled_from(("reserve", "reserve-backfill")))
        tasks = draw(st.integers((len(nodes) + 1) // 2, len(nodes)))
        builder = a_group(f"gang{k}").with_placement(mode=mode, timeout="1h", backoff="20s")
        builder = builder.with_priority(draw(st.integers(0, 2)))
        rig.submit(builder.with_member("w", gpu=8, tasks=tasks).build())
        gangs.append(f"gang{k}")
    borrowers = draw(st.integers(1, 4))
    for k in range(borrowers):
        builder = a_group(f"b{k}").atomic().with_member("w", gpu=2, preemptible=True)
        rules = builder.doc.setdefault("failure", {}).setdefault("rules", [])
        rules.append({"reasons": ["preempted"], "action": "restart-group"})
        rig.submit(builder.build())
    note(f"cluster {shape}, background {background}, gangs {gangs}, borrowers {borrowers}")
    return rig, background, gangs


@PROPERTY
@given(competition())
def test_borrowers_never_keep_a_reservation_from_completing(
    drawn: tuple[Rig, dict[str, int], list[str]],
) -> None:
    rig, background, gangs = drawn
    ran: set[str] = set()
    horizon = max(background.values(), default=0) + 6 * len(gangs) + 6
    for session in range(1, horizon + 1):
        for name, at in sorted(background.items()):
            if at == session and rig.status(name) == "RUNNING":
                rig.finish(name)
        events = rig.session(advance_s=20)
        _check_order(rig, events)
        if any(isinstance(e, ev.MemberFailed) and e.reason == "preempted" for e in events):
            event("a borrower was preempted for a gang")
        _check_all_or_nothing(rig)
        for name in rig.controller.groups():
            if name.name.startswith("b") and name.status == "RUNNING":
                rig.start_all(name.name)  # borrowers run until preempted
        for name in gangs:
            group = rig.controller.group(name)
            if group.status == "RESERVING":
                assert group.reservation_deadline_ns is not None
                assert rig.clock.now_ns < group.reservation_deadline_ns
            if group.status == "RUNNING" and name not in ran:
                ran.add(name)
                rig.finish(name)
        if ran == set(gangs):
            break
    assert ran == set(gangs), f"never ran: {sorted(set(gangs) - ran)}"
