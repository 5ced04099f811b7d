"""The group's life through the Controller: barrier, claims, timers, failure policy."""

from __future__ import annotations

import typing

import pytest

from costart.domain.aggregates import GroupUnit
from costart.domain.decisions import PlaceMember, ReleaseGroup
from costart.domain.errors import Conflict, DomainError, IllegalTransition, NotFound
from costart.domain.events import Assignment
from costart.domain.ids import CLUSTER_ID
from costart.domain.invariants import check_world
from costart.domain.scheduling import TIMED, deadline_due, on_tick
from costart.domain.states import GroupState, GroupStatus
from tests.builders import (
    HOST,
    USER,
    ManualClock,
    a_group,
    claim_fail,
    event_names,
    fail,
    full_placement,
    new_controller,
    ready,
    start,
    succeed,
)


def started_group(spec, controller):
    controller.submit(spec)
    controller.apply_decisions([full_placement(spec)])
    for member in spec.members:
        for claim in member.claims:
            ready(controller, f"{spec.name}/{member.name}", claim)
    for member in spec.members:
        start(controller, f"{spec.name}/{member.name}")
    return controller


def test_group_never_starts_before_every_claim_is_ready():
    spec = (
        a_group()
        .with_member("trainer", tasks=2, claims=("gpus", "data"))
        .with_member("rollout", replicas=3, claims=("gpus",))
        .build()
    )
    c = new_controller()
    c.submit(spec)
    c.apply_decisions([full_placement(spec)])
    assert c.group("g1").status == "PLACED"
    ready(c, "g1/trainer", "gpus")
    ready(c, "g1/trainer", "data")
    assert not c.may_start("g1/trainer")
    with pytest.raises(IllegalTransition):
        start(c, "g1/trainer")
    events = ready(c, "g1/rollout", "gpus")
    assert event_names(events) == ["ClaimReady", "BarrierReleased"]
    assert c.may_start("g1/trainer") and c.may_start("g1/rollout")


def test_members_without_claims_release_the_barrier_at_placement():
    spec = a_group().with_member("a").with_member("b", replicas=2).build()
    c = new_controller()
    c.submit(spec)
    events = c.apply_decisions([full_placement(spec)])
    assert event_names(events) == ["MemberPlaced", "MemberPlaced", "GroupPlaced", "BarrierReleased"]


def test_a_live_name_conflicts_but_an_ended_name_can_be_reused():
    spec = a_group().with_member("a").build()
    c = new_controller()
    first = c.submit(spec)
    with pytest.raises(Conflict):
        c.submit(spec)
    c.cancel("g1", actor=USER)
    second = c.submit(spec)
    assert second.id != first.id and c.group("g1").id == second.id


def test_claim_failure_before_the_start_releases_the_whole_group_with_backoff():
    clock = ManualClock()
    spec = (
        a_group()
        .with_member("a", claims=("gpus",))
        .with_member("b", claims=("gpus",))
        .with_placement(backoff="1m", backoff_max="3m")
        .build()
    )
    c = new_controller(clock)
    c.submit(spec)
    retry_delays = []
    for _ in range(4):
        c.apply_decisions([full_placement(spec)])
        ready(c, "g1/a", "gpus")
        now = clock.advance(1)
        events = claim_fail(c, "g1/b", "gpus", "volume attach failed")
        assert event_names(events) == [
            "ClaimFailed",
            "MemberReleased",
            "MemberReleased",
            "PlacementReleased",
        ]
        retry_delays.append((c.group("g1").retry_at_ns - now) // 10**9)
        assert all(not m.assignments and not m.held for m in c.members("g1"))
        check_world(c.world)
    assert retry_delays == [60, 120, 180, 180]
    assert c.group("g1").attempt == 5


def test_barrier_timeout_releases_and_retries():
    clock = ManualClock()
    spec = a_group().with_member("a", claims=("gpus",)).with_barrier("30s").build()
    c = new_controller(clock)
    c.submit(spec)
    c.apply_decisions([full_placement(spec)])
    assert c.tick(clock.advance(29)) == []
    events = c.tick(clock.advance(1))
    assert event_names(events) == ["BarrierTimedOut", "MemberReleased", "PlacementReleased"]
    assert c.group("g1").status == "PENDING"


def test_max_attempts_turns_a_release_into_failure():
    spec = a_group().with_member("a", claims=("gpus",)).with_placement(max_attempts=2).build()
    c = new_controller()
    c.submit(spec)
    for _ in range(2):
        c.apply_decisions([full_placement(spec)])
        c.apply_decisions([ReleaseGroup(group="g1", reason="test")])
    assert c.group("g1").status == "FAILED"
    assert "gave up after 2 attempts" in (c.group("g1").last_reason or "")


def test_restart_member_budget_then_escalates_to_fail_group():
    spec = (
        a_group()
        .with_member("trainer")
        .with_member("rollout", tasks=2)
        .with_rule("restart-member", members=("rollout",), reasons=("error",), max_restarts=1)
        .build()
    )
    c = started_group(spec, new_controller())
    events = fail(c, "g1/rollout", "error", exit_code=1)
    assert event_names(events) == ["MemberFailed", "MemberRestarted"]
    assert c.members("g1")[1].status == "RESTARTING"
    c.apply_decisions([PlaceMember("g1", "rollout", (Assignment(0, "x1"), Assignment(1, "x2")))])
    assert c.may_start("g1/rollout")
    start(c, "g1/rollout")
    events = fail(c, "g1/rollout", "error", exit_code=1)
    assert event_names(events)[-1] == "GroupFailed"
    assert c.group("g1").status == "FAILED"
    check_world(c.world)


@pytest.mark.parametrize("reason", ["node-lost", "preempted"])
def test_node_loss_and_preemption_never_consume_a_budget(reason):
    spec = (
        a_group()
        .with_member("rollout", replicas=1)
        .with_member("t")
        .with_rule("restart-member", members=("rollout",), reasons=("any",), max_restarts=0)
        .build()
    )
    c = started_group(spec, new_controller())
    for _ in range(3):
        events = fail(c, "g1/rollout", reason)
        assert event_names(events) == ["MemberFailed", "MemberRestarted"]
        c.apply_decisions([PlaceMember("g1", "rollout", (Assignment(0, "y"),))])
        start(c, "g1/rollout")
    rollout = c.members("g1")[0]
    assert rollout.restarts == 0 and rollout.uncounted_restarts == 3


def test_restart_group_uses_the_group_budget_then_fails():
    spec = (
        a_group()
        .with_member("trainer", claims=("gpus",))
        .with_member("rollout", replicas=2)
        .with_rule("restart-group", members=("trainer",))
        .with_failure(max_group_restarts=1)
        .build()
    )
    c = started_group(spec, new_controller())
    events = fail(c, "g1/trainer", "error")
    assert event_names(events) == [
        "MemberFailed",
        "GroupRestarted",
        "MemberReleased",
        "MemberReleased",
        "PlacementReleased",
    ]
    group = c.group("g1")
    assert group.status == "PENDING" and group.attempt == 2 and not group.barrier_released
    assert not c.may_start("g1/rollout")
    c.apply_decisions([full_placement(spec)])
    ready(c, "g1/trainer", "gpus")
    start(c, "g1/trainer")
    start(c, "g1/rollout")
    events = fail(c, "g1/trainer", "oom")
    assert event_names(events)[-1] == "GroupFailed"
    check_world(c.world)


def test_tolerate_degrades_and_fails_below_min_running():
    spec = (
        a_group()
        .with_member("trainer")
        .with_member("rollout", replicas=4, min_start=4, min_running=3)
        .with_rule("tolerate", members=("rollout",))
        .build()
    )
    c = started_group(spec, new_controller())
    events = fail(c, "g1/rollout", "error", replica=0)
    assert event_names(events) == ["MemberFailed", "GroupDegraded"]
    assert c.group("g1").status == "DEGRADED"
    assert c.members("g1")[1].status == "RUNNING" and len(c.members("g1")[1].assignments) == 3
    events = fail(c, "g1/rollout", "error", replica=1)
    assert event_names(events)[-1] == "GroupFailed"


def test_a_replaced_replica_recovers_a_degraded_group():
    spec = (
        a_group()
        .with_member("rollout", replicas=2, min_running=1)
        .with_member("t")
        .with_rule("tolerate", members=("rollout",))
        .build()
    )
    c = started_group(spec, new_controller())
    fail(c, "g1/rollout", "error", replica=1)
    events = c.apply_decisions([PlaceMember("g1", "rollout", (Assignment(1, "z"),))])
    assert event_names(events) == ["MemberPlaced", "GroupRecovered"]


@pytest.mark.parametrize(
    ("when", "members", "finish", "done"),
    [
        ("all-jobs", (), ["a"], False),
        ("all-jobs", (), ["a", "b"], True),
        ("any-job", (), ["b"], True),
        ("members", ("b",), ["a"], False),
        ("members", ("b",), ["b"], True),
    ],
)
def test_success_policy(when, members, finish, done):
    spec = (
        a_group()
        .with_member("a")
        .with_member("b")
        .with_member("svc", replicas=2)
        .with_success(when, members)
        .build()
    )
    c = started_group(spec, new_controller())
    for name in finish:
        succeed(c, f"g1/{name}")
    assert (c.group("g1").status == "SUCCEEDED") is done
    if done:
        assert {m.name: m.status for m in c.members("g1")}["svc"] == "STOPPED"
        check_world(c.world)


def test_any_job_needs_a_job_that_succeeded_not_one_that_ended():
    spec = (
        a_group()
        .with_member("a")
        .with_member("b")
        .with_failure(default="tolerate")
        .with_success("any-job")
        .build()
    )
    c = started_group(spec, new_controller())
    fail(c, "g1/a", "error", exit_code=1)
    assert c.members("g1")[0].status == "FAILED"
    assert c.group("g1").status == "DEGRADED"
    succeed(c, "g1/b")
    assert c.group("g1").status == "SUCCEEDED"


def test_cancel_tears_down_from_any_state_and_terminal_groups_never_change():
    spec = a_group().with_member("a", claims=("c",)).with_member("b", replicas=2).build()
    c = new_controller()
    c.submit(spec)
    c.apply_decisions([full_placement(spec)])
    events = c.cancel("g1", actor=USER)
    assert event_names(events) == ["MemberStopped", "MemberStopped", "GroupCancelled"]
    check_world(c.world)
    version = c.group("g1").version
    for command in (
        lambda: c.cancel("g1", actor=USER),
        lambda: start(c, "g1/a"),
        lambda: c.scale("g1/b", 3, actor=USER),
        lambda: c.apply_decisions([full_placement(spec)]),
    ):
        with pytest.raises(DomainError):
            command()
    # A late report about the stopped member is told apart, and changes nothing.
    late = c.claim_ready("g1/a", "c", 1, actor=HOST)
    assert (late.outcome, late.events) == ("stale", ())
    assert "STOPPED" in late.detail
    assert c.group("g1").version == version


def test_scale_down_stops_the_highest_replicas_and_scale_up_places_singles():
    spec = (
        a_group()
        .with_member("svc", replicas=4, min_start=2, min_running=1)
        .with_member("t")
        .build()
    )
    c = started_group(spec, new_controller())
    events = c.scale("g1/svc", 2, actor=USER)
    assert event_names(events) == ["MemberScaled"]
    assert sorted(a.index for a in c.members("g1")[0].assignments) == [0, 1]
    c.scale("g1/svc", 3, actor=USER)
    c.apply_decisions([PlaceMember("g1", "svc", (Assignment(2, "n9"),))])
    assert len(c.members("g1")[0].assignments) == 3
    with pytest.raises(DomainError):
        c.apply_decisions([PlaceMember("g1", "svc", (Assignment(3, "n9"),))])


def test_unknown_names_are_reported_clearly():
    c = new_controller()
    with pytest.raises(NotFound, match="no group named 'nope'"):
        c.cancel("nope", actor=USER)
    with pytest.raises(NotFound, match="GROUP/MEMBER"):
        ready(c, "just-a-group", "gpus")


def test_node_loss_before_the_start_releases_without_counting_an_attempt():
    spec = a_group().with_member("a", tasks=2, claims=("c",)).with_placement(max_attempts=1).build()
    c = new_controller()
    c.submit(spec)
    c.apply_decisions([full_placement(spec)])
    events = c.set_node_status("r1-n002", "down", actor=HOST)
    assert event_names(events) == ["NodeStatusChanged", "MemberReleased", "PlacementReleased"]
    assert c.group("g1").status == "PENDING"
    assert c.world.node_status == {"r1-n002": "down"}
    assert c.set_node_status("r1-n002", "down", actor=HOST) == []  # no change, nothing written
    assert event_names(c.set_node_status("r1-n002", "up", actor=HOST)) == ["NodeStatusChanged"]
    assert c.world.node_status == {}


def test_node_loss_after_the_start_fails_only_the_replicas_on_it():
    spec = (
        a_group()
        .with_member("trainer")
        .with_member("rollout", replicas=3, min_running=1)
        .with_rule("tolerate", members=("rollout",), reasons=("node-lost",))
        .build()
    )
    c = started_group(spec, new_controller())
    rollout_node = c.members("g1")[1].assignments[1].node
    events = c.set_node_status(rollout_node, "down", actor=HOST)
    assert event_names(events) == ["NodeStatusChanged", "MemberFailed", "GroupDegraded"]
    failed = events[1]
    assert failed.reason == "node-lost" and failed.index == 1
    check_world(c.world)


def test_node_loss_of_a_job_goes_through_the_policy_without_using_the_budget():
    spec = (
        a_group()
        .with_member("trainer")
        .with_member("svc", replicas=1)
        .with_rule("restart-group", members=("trainer",), reasons=("node-lost", "error"))
        .with_failure(max_group_restarts=0)
        .build()
    )
    c = started_group(spec, new_controller())
    events = c.set_node_status(c.members("g1")[0].assignments[0].node, "down", actor=HOST)
    assert event_names(events)[:3] == ["NodeStatusChanged", "MemberFailed", "GroupRestarted"]
    assert c.group("g1").group_restarts == 0 and c.group("g1").status == "PENDING"


@pytest.mark.parametrize("status", typing.get_args(GroupStatus))
def test_only_timed_statuses_have_a_deadline_due(status):
    # `Controller.tick` skips groups whose status is not in TIMED without asking.
    spec = a_group("g").with_member("a").build()
    group = GroupState(
        id=CLUSTER_ID, version=1, name="g", spec=spec, submission_seq=1, member_ids=(),
        status=status, reservation_deadline_ns=5, barrier_deadline_ns=5,
    )  # fmt: skip
    # A started group's deadline is a member's max_runtime (none here): see
    # tests/domain/test_runtime_limits.py.
    assert deadline_due(group, 10) == (status in ("RESERVING", "PLACED"))
    assert status in TIMED or not deadline_due(group, 10)
    if status in ("RESERVING", "PLACED"):
        unit = GroupUnit(group, [])
        assert on_tick(unit, 10) and unit.pending_events
