"""Backfill into held capacity (ADR 0045): a reserve-backfill reservation lends what it
holds but cannot use yet, counted once as the borrower's use, and takes it back
(reason ``preempted``, never consuming a budget) the session its gang fits."""

from __future__ import annotations

from typing import Any

import pytest

from costart.domain import events as ev
from costart.domain.decisions import LendHolds, PlaceBorrower, PlaceGroup, Preempt
from costart.domain.errors import DomainError
from costart.domain.events import Assignment
from costart.eventlog.snapshots import encode_world
from costart.placement import idle_held_gpus
from costart.replay.rebuild import rebuild
from costart.replay.source import RecorderSource
from tests.builders import a_group as any_group
from tests.builders import event_names, start

from .builders import Rig, a_cluster, a_group

HOUR_S = 3600


def _backfill(name: str, tasks: int = 4, timeout: str = "4h") -> Any:
    return a_group(name).with_placement(mode="reserve-backfill", timeout=timeout, backoff="1m")


def _rig(mode: str = "reserve-backfill") -> Rig:
    """4 nodes of 8 GPUs; "running" fills n0-n2 (no limit); the gang "big" wants all 4
    whole nodes, holds n3 and claims the rest."""
    rig = Rig(a_cluster(blocks=1, racks=1, nodes=4))
    rig.occupy("running", {"b0-r0-n0": 8, "b0-r0-n1": 8, "b0-r0-n2": 8})
    builder = a_group("big").with_placement(mode=mode, timeout="4h", backoff="1m")
    rig.submit(builder.with_member("w", gpu=8, tasks=4).build())
    rig.session()
    assert rig.nodes_of("big", "w") == ["b0-r0-n3"]
    return rig


def _small(name: str, **flags: Any) -> Any:
    """A one-task job that restarts when preempted, with no budget: a preemption
    that consumed one would fail its group."""
    builder = any_group(name).atomic().with_member("job", gpu=2, **flags)
    return builder.with_rule("restart-member", members=("job",), reasons=("preempted",))


def _events_of(events: list[Any], group: str, rig: Rig) -> list[str]:
    gid = rig.controller.group(group).id
    return [type(e).__name__ for e in events if e.group_id == gid]


def test_a_preemptible_job_borrows_a_held_node_and_it_is_counted_once() -> None:
    rig = _rig()
    rig.submit(_small("s1", preemptible=True).build())
    events = rig.session()
    assert _events_of(events, "big", rig) == ["HoldLent"]
    lent = next(e for e in events if isinstance(e, ev.HoldLent))
    assert lent.borrower == "s1" and lent.assignments == (Assignment(0, "b0-r0-n3"),)
    placed = next(e for e in events if isinstance(e, ev.MemberPlaced))
    assert placed.note == "on loan from reservation big"
    assert rig.nodes_of("s1", "job") == ["b0-r0-n3"]
    assert rig.nodes_of("big", "w") == []  # the hold is the borrower's use now
    assert rig.status("big") == "RESERVING"
    # Counted once: the borrower's 2 GPUs, nothing held idle once it runs;
    # `Rig.session` checked the no-overcommit invariant with every node's capacity.
    rig.start_all("s1")
    assert idle_held_gpus(rig.controller.world) == 0
    # The rest of the lent node is still owed: a job that may not borrow cannot take it.
    rig.submit(a_group("plain").atomic().with_member("job", gpu=2).build())
    rig.session()
    assert rig.status("plain") == "PENDING"
    # A second preemptible job may borrow the rest of the same node.
    rig.submit(_small("s2", preemptible=True).build())
    rig.session()
    assert rig.nodes_of("s2", "job") == ["b0-r0-n3"]


def test_plain_reserve_lends_nothing() -> None:
    rig = _rig(mode="reserve")
    rig.submit(_small("s1", preemptible=True).build())
    events = rig.session()
    assert "HoldLent" not in event_names(events)
    assert rig.status("s1") == "PENDING"
    assert rig.nodes_of("big", "w") == ["b0-r0-n3"]


def test_a_limited_job_borrows_only_if_its_limit_ends_before_the_expected_completion() -> None:
    rig = Rig(a_cluster(blocks=1, racks=1, nodes=4))
    # The work the reservation waits for declares a limit: it is gone within 2h.
    rig.submit(a_group("running").with_member("w", gpu=8, tasks=3, max_runtime="2h").build())
    placement = {"w": tuple(Assignment(i, f"b0-r0-n{i}") for i in range(3))}
    rig.controller.apply_decisions([PlaceGroup("running", placement)])
    start(rig.controller, "running/w")
    rig.submit(_backfill("big").with_member("w", gpu=8, tasks=4).build())
    rig.session()
    rig.submit(_small("long", max_runtime="3h").build())
    rig.submit(_small("short", max_runtime="1h").build())
    rig.session()
    assert rig.status("long") == "PENDING"  # would still run when the gang can start
    assert rig.status("short") == "RUNNING"
    assert rig.nodes_of("short", "job") == ["b0-r0-n3"]


def test_a_job_that_declares_neither_never_borrows() -> None:
    rig = _rig()
    rig.submit(a_group("plain").atomic().with_member("job", gpu=2).build())
    rig.session()
    assert rig.status("plain") == "PENDING"
    assert rig.nodes_of("big", "w") == ["b0-r0-n3"]


def test_when_the_gang_fits_the_borrower_is_preempted_without_using_its_budget() -> None:
    rig = _rig()
    rig.submit(_small("s1", preemptible=True).build())
    rig.session()
    rig.start_all("s1")
    assert rig.controller.members("s1")[0].status == "RUNNING"
    rig.finish("running")
    events = rig.session()
    failed = [e for e in events if isinstance(e, ev.MemberFailed)]
    assert [(e.reason, e.action) for e in failed] == [("preempted", "restart-member")]
    assert failed[0].note == "preempted for reservation big"
    restarted = next(e for e in events if isinstance(e, ev.MemberRestarted))
    assert not restarted.counted and restarted.restarts == 0
    # The gang starts in the same session, on all four nodes.
    assert rig.status("big") == "RUNNING"
    assert sorted(rig.nodes_of("big", "w")) == [f"b0-r0-n{i}" for i in range(4)]
    assert rig.controller.members("s1")[0].status == "RESTARTING"


def test_a_borrower_still_at_its_barrier_is_released_and_retried_without_counting() -> None:
    rig = _rig()
    rig.submit(
        a_group("s1")
        .atomic()
        .with_placement(max_attempts=1)
        .with_member("job", gpu=2, preemptible=True, claims=("data",))
        .build()
    )
    rig.session()
    assert rig.status("s1") == "PLACED"  # waits for its claim
    rig.finish("running")
    rig.session()
    assert rig.status("big") == "RUNNING"
    assert rig.status("s1") == "PENDING"  # released, not failed: its one attempt is kept
    assert rig.controller.group("s1").last_reason == "preempted for reservation big"


def test_a_higher_reservation_stops_a_lower_preemptible_borrower_too() -> None:
    # "low" lends to a preemptible job; a higher plain reservation that needs that
    # node is not blocked by it once the rest of its plan is free.
    rig = Rig(a_cluster(blocks=1, racks=1, nodes=2))
    rig.submit(a_group("running").with_member("w", gpu=8, tasks=1).build())
    rig.controller.apply_decisions([PlaceGroup("running", {"w": (Assignment(0, "b0-r0-n0"),)})])
    start(rig.controller, "running/w")
    rig.submit(_backfill("low").with_member("w", gpu=8, tasks=2).build())
    rig.session()
    rig.submit(_small("s1", preemptible=True).build())
    rig.session()
    assert rig.nodes_of("s1", "job") == ["b0-r0-n1"]
    rig.submit(
        a_group("high").with_priority(5).reserve(timeout="1h").with_member("w", gpu=8).build()
    )
    events = rig.session()  # "high" opens its reservation
    events += rig.session()  # and takes the node back
    assert rig.status("high") == "RUNNING", rig.controller.group("high").pend_reason
    assert "preempted" in [e.reason for e in events if isinstance(e, ev.MemberFailed)]


def test_lending_and_preempting_replay_to_the_same_state_bytes() -> None:
    rig = _rig()
    rig.submit(_small("s1", preemptible=True).build())
    rig.session()
    rig.start_all("s1")
    rig.finish("running")
    rig.session()
    live = rig.controller.world
    rebuilt = rebuild(RecorderSource(rig.controller.recorder))
    assert encode_world(rebuilt) == encode_world(live)


def test_decisions_that_break_the_lending_rules_are_refused_and_write_nothing() -> None:
    rig = _rig(mode="reserve")
    rig.submit(a_group("plain").atomic().with_member("job", gpu=2).build())
    rig.submit(_small("spare", preemptible=True).build())
    controller = rig.controller
    before = controller.recorder.max_notification_id()
    n3 = (Assignment(0, "b0-r0-n3"),)
    refused = [
        (LendHolds("big", {"w": n3}, "plain"), "not in plan-ahead or reserve-backfill mode"),
        (PlaceBorrower("plain", {"job": n3}, "big"), "neither declares max_runtime"),
        (Preempt("plain", ("b0-r0-n3",), "big"), "member job is not preemptible"),
        (Preempt("spare", ("b0-r0-n3",), "big"), "PENDING"),
    ]
    for decision, why in refused:
        with pytest.raises(DomainError, match=why):
            controller.apply_decisions([decision])
    assert controller.recorder.max_notification_id() == before


def test_a_lender_can_only_lend_what_it_holds() -> None:
    rig = _rig()
    rig.submit(_small("s1", preemptible=True).build())
    with pytest.raises(DomainError, match="is not held"):
        rig.controller.apply_decisions(
            [LendHolds("big", {"w": (Assignment(0, "b0-r0-n0"),)}, "s1")]
        )


def test_a_lower_lending_reservation_never_holds_what_the_head_plan_needs() -> None:
    # As for reserve (test_reservations.py), with both reservations lending and a
    # preemptible job around to borrow: n2's free half is the head's, not the lower's.
    rig = Rig(a_cluster(blocks=1, racks=1, nodes=4))
    rig.occupy("running", {"b0-r0-n0": 8, "b0-r0-n1": 8, "b0-r0-n2": 4})
    rig.submit(_backfill("head").with_member("w", gpu=8, tasks=4).build())
    rig.submit(_backfill("next").with_member("w", gpu=4, tasks=2).build())
    rig.submit(_small("s1", preemptible=True).build())
    rig.session()
    assert rig.nodes_of("head", "w") == ["b0-r0-n3"]
    assert "b0-r0-n2" not in rig.nodes_of("next", "w")
    rig.session()
    # The borrower got the head's capacity (lent, counted once), never the lower's holds
    # on what the head needs.
    assert rig.nodes_of("s1", "job") in (["b0-r0-n2"], ["b0-r0-n3"])
    assert "b0-r0-n2" not in rig.nodes_of("next", "w")
