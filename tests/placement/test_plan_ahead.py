"""The ``plan-ahead`` mode (ADR 0108): a gang that does not fit now gets a planned start
from the running work's declared limits, claims its planned nodes,
lets lower work start there only if it ends in time, holds only what no lower work could
use in time and only against lower work that would take it (ADR 0122), and starts in
one `PlaceGroup` when its gang fits. Where it cannot plan (work without a limit), it
reserves, holding too only against lower work that would take what frees."""

from __future__ import annotations

from typing import Any

import pytest

from costart.domain import events as ev
from costart.domain import expected_runtime as runtimes
from costart.domain.decisions import PlaceGroup
from costart.domain.events import Assignment
from costart.domain.spec_types import GroupSpec, MemberSpec
from costart.domain.world import World
from costart.eventlog.snapshot_schema import SNAPSHOT_SCHEMA, decode_state, encode_state
from costart.placement import idle_held_gpus
from costart.placement.shadow import estimate_starts, expected_starts
from tests.builders import SECOND_NS

from .builders import Rig, a_cluster, a_group

HOUR_NS = 3600 * SECOND_NS


def _occupy(rig: Rig, name: str, gpus_by_node: dict[str, int], limit: str | None) -> None:
    """A running group using ``gpus_by_node`` (1-GPU tasks), with a declared limit."""
    tasks = sum(gpus_by_node.values())
    rig.submit(a_group(name).with_member("w", gpu=1, tasks=tasks, max_runtime=limit).build())
    nodes = [node for node, gpus in sorted(gpus_by_node.items()) for _ in range(gpus)]
    placement = {"w": tuple(Assignment(i, node) for i, node in enumerate(nodes))}
    rig.controller.apply_decisions([PlaceGroup(name, placement)])
    rig.start_all(name)
    rig.check()


def _rig(limit: str | None = "2h") -> Rig:
    """4 nodes of 8 GPUs; "running" fills n0-n2 with ``limit``; the plan-ahead gang
    "big" wants all 4 whole nodes."""
    rig = Rig(a_cluster(blocks=1, racks=1, nodes=4))
    _occupy(rig, "running", {"b0-r0-n0": 8, "b0-r0-n1": 8, "b0-r0-n2": 8}, limit)
    builder = a_group("big").with_placement(mode="plan-ahead", timeout="8h", backoff="1m")
    rig.submit(builder.with_member("w", gpu=8, tasks=4).build())
    return rig


def _job(name: str, limit: str | None = None, **flags: Any) -> Any:
    return a_group(name).atomic().with_member("job", gpu=2, max_runtime=limit, **flags).build()


def _started_at(rig: Rig, name: str) -> int:
    started = rig.controller.members(name)[0].started_at_ns
    assert started is not None
    return started


def _events_of(events: list[Any], group: str, rig: Rig) -> list[str]:
    gid = rig.controller.group(group).id
    return [type(e).__name__ for e in events if e.group_id == gid]


def test_a_gang_is_planned_from_limits_and_holds_nothing_nobody_else_wants() -> None:
    rig = _rig()
    events = rig.session()
    reason = rig.controller.group("big").pend_reason
    assert reason is not None and reason.planned_basis == "limit"
    assert reason.planned_start_ns == _started_at(rig, "running") + 2 * HOUR_NS
    # Nothing lower waits: holding n3 would deny nobody and start big no sooner (its
    # claim keeps the session's lower groups off it), so nothing is held (ADR 0122).
    assert _events_of(events, "big", rig) == ["PendReasonChanged"]
    assert rig.nodes_of("big", "w") == [] and rig.status("big") == "PENDING"
    assert idle_held_gpus(rig.controller.world) == 0
    # The same plan next session: nothing new is recorded.
    assert _events_of(rig.session(), "big", rig) == []
    # Work that would take n3 and cannot end before the start arrives: now n3 is held
    # (and the plan stays there from session to session), as `reserve` would hold it.
    rig.submit(_job("open"))
    events = rig.session()
    assert _events_of(events, "big", rig) == [
        "ReservationOpened",
        "MemberHeld",
        "PendReasonChanged",  # 3 tasks left to wait for, no longer 4
    ]
    assert rig.nodes_of("big", "w") == ["b0-r0-n3"] and rig.status("big") == "RESERVING"
    assert rig.status("open") == "PENDING"


def test_lower_work_that_would_not_fit_what_frees_makes_nothing_held() -> None:
    """A lower gang too wide for n3 would take nothing of big's plan: big holds nothing
    (the deadlock trap: gangs that fit only one at a time), with a limit or without."""
    for limit in ("2h", None):
        rig = _rig(limit)
        wide = a_group("wide").with_placement(mode="plan-ahead", timeout="8h", backoff="1m")
        rig.submit(wide.with_member("w", gpu=8, tasks=2).build())
        rig.session()
        assert rig.status("big") == "PENDING" and rig.nodes_of("big", "w") == [], limit
        assert rig.status("wide") == "PENDING" and idle_held_gpus(rig.controller.world) == 0
        rig.finish("running")
        rig.session()
        assert sorted(rig.nodes_of("big", "w")) == [f"b0-r0-n{i}" for i in range(4)]
        assert rig.status("wide") == "PENDING"


def test_lower_work_starts_on_its_nodes_only_if_its_limit_ends_before_the_start() -> None:
    rig = _rig()
    rig.submit(_job("early", "1h"), _job("late", "3h"), _job("open"))
    rig.submit(_job("stoppable", preemptible=True))
    events = rig.session()
    # A lower job could end before the start: nothing is held, the plan's nodes are
    # claimed and lent to it.
    assert "MemberHeld" not in _events_of(events, "big", rig)
    placed = next(e for e in events if isinstance(e, ev.MemberPlaced))
    assert placed.note == "on loan from reservation big"
    assert rig.nodes_of("early", "job") == ["b0-r0-n3"]
    # Would run past big's planned start on its nodes, or without end, or only be
    # stoppable: none of them starts there.
    for name in ("late", "open", "stoppable"):
        assert rig.status(name) == "PENDING", name
    reason = rig.controller.group("late").pend_reason
    assert reason is not None and reason.cls == "queue" and reason.ahead == ("big",)
    rig.start_all("early")
    assert idle_held_gpus(rig.controller.world) == 0


def test_the_gang_starts_in_one_placement_when_the_running_work_ends() -> None:
    rig = _rig()
    rig.session()
    rig.finish("running")
    events = rig.session()
    assert "MemberPlaced" in _events_of(events, "big", rig)
    assert "MemberHeld" not in _events_of(events, "big", rig)
    assert sorted(rig.nodes_of("big", "w")) == [f"b0-r0-n{i}" for i in range(4)]


def test_work_without_a_limit_cannot_be_planned_so_the_gang_reserves() -> None:
    rig = _rig(limit=None)
    events = rig.session()
    # Nothing lower waits: it claims its plan and holds nothing (ADR 0122).
    assert "MemberHeld" not in _events_of(events, "big", rig)
    assert rig.status("big") == "PENDING" and rig.nodes_of("big", "w") == []
    reason = rig.controller.group("big").pend_reason
    assert reason is not None and reason.planned_start_ns is None
    assert reason.ahead == ()
    rig.submit(_job("open"))
    events = rig.session()
    assert "MemberHeld" in _events_of(events, "big", rig)
    assert rig.status("big") == "RESERVING" and rig.nodes_of("big", "w") == ["b0-r0-n3"]
    assert rig.status("open") == "PENDING"


def test_the_start_is_planned_again_when_work_ends_early_and_recorded_when_it_moves() -> None:
    rig = Rig(a_cluster(blocks=1, racks=1, nodes=4))
    _occupy(rig, "short", {"b0-r0-n0": 8, "b0-r0-n1": 8}, "2h")
    _occupy(rig, "long", {"b0-r0-n2": 8}, "3h")
    builder = a_group("big").with_placement(mode="plan-ahead", timeout="8h", backoff="1m")
    rig.submit(builder.with_member("w", gpu=8, tasks=4).build())
    rig.session()
    reason = rig.controller.group("big").pend_reason
    assert reason is not None and reason.planned_start_ns == _started_at(rig, "long") + 3 * HOUR_NS
    rig.finish("long")
    events = rig.session()
    assert _events_of(events, "big", rig) == ["PendReasonChanged"]  # nothing lower: no hold
    reason = rig.controller.group("big").pend_reason
    assert reason is not None and reason.planned_start_ns == _started_at(rig, "short") + 2 * HOUR_NS


def test_a_lower_plan_ahead_gang_is_planned_after_the_higher_one_it_would_delay() -> None:
    rig = Rig(a_cluster(blocks=1, racks=1, nodes=4))
    _occupy(rig, "running", {"b0-r0-n0": 8, "b0-r0-n1": 8, "b0-r0-n2": 8}, "2h")
    mode = {"mode": "plan-ahead", "timeout": "8h", "backoff": "1m"}
    big = a_group("big").with_placement(**mode).with_member("w", gpu=8, tasks=4, max_runtime="1h")
    lower = a_group("lower").with_placement(**mode)
    rig.submit(big.build(), lower.with_member("w", gpu=8, tasks=1, max_runtime="4h").build())
    rig.session()
    # n3 is free now, but big needs it from its planned start and lower would run past
    # it (so big holds it): lower is planned after big's run.
    assert rig.nodes_of("big", "w") == ["b0-r0-n3"]
    assert rig.status("lower") == "PENDING" and rig.nodes_of("lower", "w") == []
    first = rig.controller.group("big").pend_reason
    second = rig.controller.group("lower").pend_reason
    assert first is not None and second is not None and first.planned_start_ns is not None
    assert second.planned_start_ns == first.planned_start_ns + HOUR_NS
    assert second.ahead == ("big",) and idle_held_gpus(rig.controller.world) == 8


def test_every_waiting_group_has_an_expected_start_read_from_the_world_alone() -> None:
    rig = _rig()
    rig.submit(_job("late", "3h"), _job("open"))
    world, now = rig.controller.world, rig.clock.now_ns
    starts = expected_starts(rig.cluster, world, now)
    # big waits for running's limit; late fits n3 now only if it ends before big's
    # start (it does not), so it follows big; open (no limit) after big, without end.
    big = _started_at(rig, "running") + 2 * HOUR_NS
    assert (starts["big"].start_ns, starts["big"].basis) == (big, "limit")
    assert starts["late"].start_ns is None and starts["late"].unplanned == "window"
    assert starts["open"].start_ns is None
    assert "running" not in starts  # only waiting groups are planned
    # Pure: the same World and time give the same answer; nothing was written.
    before = rig.controller.recorder.max_notification_id()
    assert expected_starts(rig.cluster, world, now) == starts
    assert rig.controller.recorder.max_notification_id() == before
    # The displays' estimate carries the plan's point and basis for every waiting group.
    estimates = estimate_starts(rig.cluster, world, now)
    assert list(estimates) == list(starts)
    assert [(e.start_ns, e.basis, e.unplanned) for e in estimates.values()] == [
        (p.start_ns, p.basis, p.unplanned) for p in starts.values()
    ]


def test_a_plan_may_rest_on_estimates_and_an_estimate_lends_until_it_runs_out(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Runtime estimates (`costart.domain.expected_runtime`) move the planned start and
    are recorded as its basis; a borrower may be admitted on its declared limit, or on
    an estimate, until when its placement records (ADR 0121)."""
    declared = runtimes.expected_runtime

    def estimated(
        group: GroupSpec, member: MemberSpec, history: object = None
    ) -> runtimes.ExpectedRuntime:
        if group.name == "running":
            return runtimes.ExpectedRuntime(HOUR_NS, "estimate")
        if group.name == "guess":
            return runtimes.ExpectedRuntime(HOUR_NS // 2, "estimate")
        return declared(group, member)

    monkeypatch.setattr(runtimes, "expected_runtime", estimated)
    rig = _rig(limit=None)
    rig.submit(_job("short", "30m"), _job("guess"))
    rig.session()
    reason = rig.controller.group("big").pend_reason
    assert reason is not None and reason.planned_basis == "estimate"
    assert reason.planned_start_ns == _started_at(rig, "running") + HOUR_NS
    # Both end before big's start and borrow n3: "short" by its declared limit,
    # "guess" by an estimate, admitted until now plus that estimate.
    assert rig.nodes_of("short", "job") == ["b0-r0-n3"]
    assert rig.nodes_of("guess", "job") == ["b0-r0-n3"]
    assert rig.controller.group("short").admitted_until_ns is None
    assert rig.controller.group("guess").admitted_until_ns == rig.clock.now_ns + HOUR_NS // 2


def test_once_it_holds_it_lends_only_what_it_can_take_back() -> None:
    """A plan-ahead gang that holds plans as `reserve` does (ADR 0122): its holds are
    lent only to preemptible work, taken back the session its gang fits; a job whose
    limit ends before the planned start is not admitted on them (a start that slips
    would wait for it)."""
    rig = _rig()
    rig.submit(_job("open"))
    rig.session()
    assert rig.nodes_of("big", "w") == ["b0-r0-n3"]  # held against "open"
    rig.submit(_job("early", "1h"), _job("stoppable", preemptible=True))
    events = rig.session()
    lent = next(e for e in events if isinstance(e, ev.HoldLent))
    assert lent.borrower == "stoppable" and lent.assignments == (Assignment(0, "b0-r0-n3"),)
    assert rig.nodes_of("stoppable", "job") == ["b0-r0-n3"]
    assert rig.status("early") == "PENDING" and rig.status("open") == "PENDING"
    reason = rig.controller.group("big").pend_reason
    assert (
        reason is not None and reason.planned_start_ns == _started_at(rig, "running") + 2 * HOUR_NS
    )
    rig.start_all("stoppable")
    rig.finish("running")
    events = rig.session()
    failed = [e for e in events if isinstance(e, ev.MemberFailed)]
    assert [e.reason for e in failed] == ["preempted"]
    assert sorted(rig.nodes_of("big", "w")) == [f"b0-r0-n{i}" for i in range(4)]


def test_runs_learned_from_the_log_plan_a_start_where_nothing_declares_a_limit() -> None:
    """No limit anywhere: the start is planned from the World's runtime history (three
    earlier runs of the same workload, 1h, 2h and 3h: the 80th percentile is 3h), and
    the pend reason says it rests on an estimate."""
    rig = Rig(a_cluster(blocks=1, racks=1, nodes=4))
    for i, hours in enumerate((1, 2, 3), start=1):
        _occupy(rig, f"running-{i}", {"b0-r0-n0": 8}, None)
        rig.clock.advance(hours * 3600)
        rig.finish(f"running-{i}")
    _occupy(rig, "running", {"b0-r0-n0": 8, "b0-r0-n1": 8, "b0-r0-n2": 8}, None)
    builder = a_group("big").with_placement(mode="plan-ahead", timeout="8h", backoff="1m")
    rig.submit(builder.with_member("w", gpu=8, tasks=4).build())
    rig.session()
    reason = rig.controller.group("big").pend_reason
    assert reason is not None and reason.planned_basis == "estimate"
    assert reason.planned_start_ns == _started_at(rig, "running") + 3 * HOUR_NS


# --- lending on a learned runtime estimate, preemption as the fallback (ADR 0121) --------

MINUTE_S = 60


def _ran(rig: Rig, name: str, minutes: int) -> None:
    """An earlier run of a ``_job`` that succeeded after ``minutes`` on n3 (history)."""
    rig.submit(_job(name))
    rig.controller.apply_decisions([PlaceGroup(name, {"job": (Assignment(0, "b0-r0-n3"),)})])
    rig.start_all(name)
    rig.clock.advance(minutes * MINUTE_S)
    rig.finish(name)


def _estimate_rig(borrower: Any) -> Rig:
    """No limit anywhere but ``borrower``'s: "running" (n0-n2) is estimated at 3h from
    three earlier runs (1h, 2h, 3h); "guess" jobs at 30m (20m, 30m, 30m: the 80th
    percentile is 30m). The plan-ahead gang "big" wants all 4 nodes, so its start is
    planned 3h after running's; ``borrower`` (a 2-GPU job) then waits behind it."""
    rig = Rig(a_cluster(blocks=1, racks=1, nodes=4))
    for i, hours in enumerate((1, 2, 3), start=1):
        _occupy(rig, f"running-{i}", {"b0-r0-n0": 8}, None)
        rig.clock.advance(hours * 3600)
        rig.finish(f"running-{i}")
    for i, minutes in enumerate((20, 30, 30), start=1):
        _ran(rig, f"guess-{i}", minutes)
    _occupy(rig, "running", {"b0-r0-n0": 8, "b0-r0-n1": 8, "b0-r0-n2": 8}, None)
    builder = a_group("big").with_placement(mode="plan-ahead", timeout="8h", backoff="1m")
    rig.submit(builder.with_member("w", gpu=8, tasks=4).build(), borrower)
    return rig


def test_a_job_borrows_on_its_learned_estimate_and_its_placement_records_until_when() -> None:
    rig = _estimate_rig(_job("guess"))
    events = rig.session()
    assert rig.nodes_of("guess", "job") == ["b0-r0-n3"]
    placed = [e for e in events if isinstance(e, ev.GroupPlaced)]
    until = rig.clock.now_ns + 30 * MINUTE_S * SECOND_NS
    assert [(e.admitted_until_ns, e.note) for e in placed] == [
        (until, "on loan from reservation big, on a runtime estimate")
    ]
    (record,) = placed[0].estimates
    assert (record.member, record.basis, record.runtime_ns, record.samples) == (
        "job",
        "estimate",
        30 * MINUTE_S * SECOND_NS,
        3,
    )
    assert rig.controller.group("guess").admitted_until_ns == until


def test_past_its_estimate_the_borrower_is_preempted_and_the_gang_starts() -> None:
    rig = _estimate_rig(_job("guess"))
    rig.session()
    until = rig.controller.group("guess").admitted_until_ns
    assert until is not None
    rig.start_all("guess")
    rig.clock.advance(10 * MINUTE_S)
    rig.finish("running")  # ends early: big's gang now needs only guess's node
    rig.session()  # big claims what running freed (nothing lower waits: no hold)
    assert rig.status("big") == "PENDING" and rig.status("guess") == "RUNNING"
    # Before the estimate runs out, guess is not stopped: big waits.
    rig.clock.advance((until - rig.clock.now_ns) // SECOND_NS - 2)
    rig.session()  # one second before the until-time
    assert rig.status("guess") == "RUNNING" and rig.status("big") in ("PENDING", "RESERVING")
    events = rig.session()  # the session at the until-time
    assert rig.clock.now_ns >= until
    failed = [e for e in events if isinstance(e, ev.MemberFailed)]
    assert [(e.reason, e.note) for e in failed] == [
        ("preempted", "preempted for reservation big: its runtime estimate ran out")
    ]
    assert sorted(rig.nodes_of("big", "w")) == [f"b0-r0-n{i}" for i in range(4)]
    assert rig.status("big") == "RUNNING"


def test_a_borrower_admitted_by_its_limit_is_never_stopped_for_the_gang() -> None:
    rig = _estimate_rig(_job("short", "1h"))
    rig.session()
    assert rig.nodes_of("short", "job") == ["b0-r0-n3"]
    assert rig.controller.group("short").admitted_until_ns is None
    rig.start_all("short")
    rig.finish("running")
    for _ in range(5):  # 50 minutes past big's earliest possible start
        events = rig.session(advance_s=10 * MINUTE_S)
        assert not [e for e in events if isinstance(e, ev.MemberFailed)]
    assert rig.status("short") == "RUNNING" and rig.nodes_of("big", "w") == []
    assert rig.status("big") == "PENDING"
    rig.finish("short")
    rig.session()
    assert sorted(rig.nodes_of("big", "w")) == [f"b0-r0-n{i}" for i in range(4)]


def test_replay_and_a_snapshot_keep_the_admitted_until_time() -> None:
    rig = _estimate_rig(_job("guess"))
    rig.session()
    world = rig.controller.world
    until = world.group_named("guess").admitted_until_ns
    assert until is not None
    restored = decode_state(encode_state(world), SNAPSHOT_SCHEMA)
    assert restored.group_named("guess").admitted_until_ns == until
    replayed = World()
    for _, event in rig.controller.read_events():
        replayed.apply(event)
    assert replayed.group_named("guess").admitted_until_ns == until
    assert replayed.groups == world.groups == restored.groups


def test_a_gang_that_holds_nothing_still_stops_a_borrower_past_its_estimate() -> None:
    """A lower waiting job estimated at 5 minutes (too wide to fit) keeps big from
    holding anything, so big never becomes a reservation: the fallback of what it lent on
    an estimate holds all the same."""
    rig = _estimate_rig(_job("guess"))
    for i in (1, 2, 3):
        _ran(rig, f"quick-{i}", 5)
    rig.session()
    until = rig.controller.group("guess").admitted_until_ns
    assert until is not None
    rig.start_all("guess")
    rig.submit(a_group("quick-9").atomic().with_member("job", gpu=8, tasks=4).build())
    rig.clock.advance(10 * MINUTE_S)
    rig.finish("running")
    rig.session()
    assert (rig.status("big"), rig.status("guess")) == ("PENDING", "RUNNING")
    events = rig.session(advance_s=(until - rig.clock.now_ns) / SECOND_NS)
    failed = [e for e in events if isinstance(e, ev.MemberFailed)]
    assert [(e.reason, e.note) for e in failed] == [
        ("preempted", "preempted for reservation big: its runtime estimate ran out")
    ]
    assert rig.status("big") == "RUNNING" and rig.status("quick-9") == "PENDING"


def test_beyond_the_scan_bound_a_plan_holds_as_if_contested() -> None:
    """`ShadowSession.contested` asks at most `LOWER_SCAN` lower groups: with that many
    waiting gangs too wide for the freed node nothing is held, with one more it holds
    (erring toward holding, ADR 0122)."""
    from costart.placement.plan_ahead import LOWER_SCAN

    for extra, held in ((0, []), (1, ["b0-r0-n3"])):
        rig = _rig()
        mode = {"mode": "atomic", "backoff": "1m"}
        for i in range(LOWER_SCAN + extra):
            wide = a_group(f"wide-{i:03}").with_placement(**mode)
            rig.submit(wide.with_member("w", gpu=8, tasks=2).build())
        rig.session()
        assert rig.nodes_of("big", "w") == held, extra
