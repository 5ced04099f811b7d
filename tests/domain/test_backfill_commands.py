"""The three backfill commands of `costart.domain.backfill` (ADR 0045), each on its own
group and driven as the placement step's decisions: what each records, in which words,
and what each refuses, with nothing written.

`tests/placement/test_backfill.py` shows the placement step choosing them; these tests
pin the domain's side whatever the placement step decides.
"""

from __future__ import annotations

from typing import Any

import pytest

from costart.controller import Controller
from costart.display import clock
from costart.domain import events as ev
from costart.domain.decisions import HoldCapacity, LendHolds, PlaceBorrower, PlaceMember, Preempt
from costart.domain.errors import DomainError
from costart.domain.events import Assignment, RuntimeEstimate
from costart.projections.derive import event_detail
from tests.builders import (
    SECOND_NS,
    ManualClock,
    a_group,
    event_names,
    fail,
    new_controller,
    ready,
    start,
    succeed,
)

NOW_NS = 7 * SECOND_NS  # every command below runs at this time


def at(index: int, node: str) -> Assignment:
    return Assignment(index, node)


def controller() -> Controller:
    return new_controller(ManualClock(NOW_NS))


def refused(c: Controller, decision: Any, message: str) -> None:
    """``decision`` is refused in exactly these words, and nothing is written."""
    before = c.recorder.max_notification_id()
    with pytest.raises(DomainError) as raised:
        c.apply_decisions([decision])
    assert str(raised.value) == message
    assert c.recorder.max_notification_id() == before


# --- lend_holds ---------------------------------------------------------------------------


def reservation(c: Controller, mode: str = "reserve-backfill") -> None:
    """ "big" (two members) holds w's task 0 on n1 and v's task 0 on n3: RESERVING."""
    spec = (
        a_group("big")
        .with_placement(mode=mode, timeout="4h")
        .with_member("w", gpu=8, tasks=2)
        .with_member("v", gpu=8)
        .build()
    )
    c.submit(spec)
    c.apply_decisions([HoldCapacity("big", {"w": (at(0, "n1"),), "v": (at(0, "n3"),)})])
    assert c.group("big").status == "RESERVING"


def test_a_reservation_lends_held_tasks_member_by_member_in_name_order():
    c = controller()
    reservation(c)
    lend = {"w": (at(0, "n1"),), "v": (at(0, "n3"),)}
    written = c.apply_decisions([LendHolds("big", lend, "small")])
    assert [(type(e).__name__, e.assignments, e.borrower, e.at_ns) for e in written] == [
        ("HoldLent", (at(0, "n3"),), "small", NOW_NS),  # v before w: sorted by name
        ("HoldLent", (at(0, "n1"),), "small", NOW_NS),
    ]
    members = {m.name: m for m in c.members("big")}
    assert [written[0].originator_id, written[1].originator_id] == [
        members["v"].id,
        members["w"].id,
    ]
    assert (members["w"].held, members["w"].status) == ([], "PENDING")


def test_a_member_lending_nothing_records_nothing():
    c = controller()
    reservation(c)
    written = c.apply_decisions([LendHolds("big", {"w": (), "v": (at(0, "n3"),)}, "small")])
    assert event_names(written) == ["HoldLent"]
    assert [a.node for a in c.members("big")[0].held] == ["n1"]


def test_only_a_backfill_reservation_lends():
    c = controller()
    reservation(c, mode="reserve")
    refused(
        c,
        LendHolds("big", {"w": (at(0, "n1"),)}, "small"),
        "group big is not in plan-ahead or reserve-backfill mode: it lends nothing",
    )


def test_a_backfill_group_lends_only_while_it_reserves():
    c = controller()
    c.submit(a_group("big").with_placement(mode="reserve-backfill").with_member("w").build())
    refused(
        c,
        LendHolds("big", {"w": (at(0, "n1"),)}, "small"),
        "group big is PENDING: cannot lend held capacity",
    )


def test_a_reservation_cannot_lend_to_itself():
    c = controller()
    reservation(c)
    refused(c, LendHolds("big", {"w": (at(0, "n1"),)}, "big"), "group big cannot lend to itself")


@pytest.mark.parametrize(
    ("lent", "message"),
    [
        (at(1, "n1"), "member w: task 1 on n1 is not held"),  # a task it does not hold
        (at(0, "n2"), "member w: task 0 on n2 is not held"),  # held, but on another node
    ],
    ids=["task-not-held", "other-node"],
)
def test_a_reservation_lends_only_what_it_holds_where_it_holds_it(lent, message):
    c = controller()
    reservation(c)
    refused(c, LendHolds("big", {"w": (lent,)}, "small"), message)


# --- place_borrower -----------------------------------------------------------------------


def borrower(c: Controller, **flags: Any) -> None:
    """ "small": a one-task job, placed on lent capacity (``flags`` make it fit to)."""
    spec = (
        a_group("small")
        .atomic()
        .with_placement(max_attempts=1)
        .with_member("job", gpu=2, claims=("data",), **flags)
        .with_rule("restart-member", members=("job",), reasons=("preempted",))
        .build()
    )
    c.submit(spec)


@pytest.mark.parametrize(
    "flags", [{"preemptible": True}, {"max_runtime": "1h"}], ids=["preemptible", "limited"]
)
def test_a_borrower_that_may_be_stopped_or_ends_in_time_is_placed_saying_whose_it_is(flags):
    c = controller()
    borrower(c, **flags)
    written = c.apply_decisions([PlaceBorrower("small", {"job": (at(0, "n1"),)}, "big")])
    assert event_names(written) == ["MemberPlaced", "GroupPlaced"]
    assert {(e.note, e.at_ns) for e in written} == {("on loan from reservation big", NOW_NS)}
    (job,) = c.members("small")
    assert (c.group("small").status, job.assignments) == ("PLACED", [at(0, "n1")])


def test_a_borrower_that_neither_may_be_stopped_nor_ends_in_time_is_refused():
    c = controller()
    borrower(c)
    refused(
        c,
        PlaceBorrower("small", {"job": (at(0, "n1"),)}, "big"),
        "member job neither declares max_runtime nor is preemptible, nor was admitted "
        "on a runtime estimate: it may not borrow from reservation big",
    )


# --- a borrower admitted on a runtime estimate (ADR 0121) ----------------------------------

HOUR_NS = 3600 * SECOND_NS
GUESS = RuntimeEstimate(
    member="job", runtime_ns=HOUR_NS, basis="estimate", samples=3, percentile=80, key="k"
)


def estimated_borrower(clock: ManualClock) -> Controller:
    """ "small" (no limit, not preemptible) placed on loan until an hour from now, on
    the estimate ``GUESS``."""
    c = new_controller(clock)
    borrower(c)
    where = {"job": (at(0, "n1"),)}
    c.apply_decisions([PlaceBorrower("small", where, "big", NOW_NS + HOUR_NS, (GUESS,))])
    return c


def test_a_borrower_admitted_on_an_estimate_records_until_when_and_what_it_rested_on():
    c = estimated_borrower(ManualClock(NOW_NS))
    placed = [e for _, e in c.read_events() if isinstance(e, ev.GroupPlaced)]
    assert [(e.admitted_until_ns, e.estimates, e.note) for e in placed] == [
        (NOW_NS + HOUR_NS, (GUESS,), "on loan from reservation big, on a runtime estimate")
    ]
    assert c.group("small").admitted_until_ns == NOW_NS + HOUR_NS
    until = clock(NOW_NS + HOUR_NS)
    assert event_detail(placed[0]) == (
        f"attempt 1: every member placed, waiting at the barrier; on a runtime estimate until {until}"
    )


@pytest.mark.parametrize(
    ("until", "estimates", "message"),
    [
        (None, (GUESS,), "group small: estimates recorded without an admitted-until time"),
        (NOW_NS, (GUESS,), f"group small: admitted until {NOW_NS}, not after {NOW_NS}"),
        (
            NOW_NS + HOUR_NS,
            (),
            "member job neither declares max_runtime nor is preemptible, nor was admitted "
            "on a runtime estimate: it may not borrow from reservation big",
        ),
    ],
    ids=["no-until", "until-now", "no-record"],
)
def test_an_estimate_admission_without_its_time_or_records_is_refused(
    until: int | None, estimates: tuple[RuntimeEstimate, ...], message: str
):
    c = controller()
    borrower(c)
    refused(c, PlaceBorrower("small", {"job": (at(0, "n1"),)}, "big", until, estimates), message)


def test_an_estimate_borrower_is_stopped_only_once_its_estimate_has_run_out():
    clock = ManualClock(NOW_NS)
    c = estimated_borrower(clock)
    ready(c, "small/job", "data")
    start(c, "small/job")
    clock.advance(3599)  # one second before it runs out: ADR 0092's rule holds
    refused(
        c,
        Preempt("small", ("n1",), "big"),
        "member job is not preemptible: reservation big may not stop group small",
    )
    clock.advance(1)
    written = c.apply_decisions([Preempt("small", ("n1",), "big")])
    failed = [e for e in written if isinstance(e, ev.MemberFailed)]
    assert [(e.reason, e.index) for e in failed] == [("preempted", 0)]
    why = "preempted for reservation big: its runtime estimate ran out"
    assert {e.note for e in written} == {why}


# --- preempt ------------------------------------------------------------------------------


def placed_borrower() -> Controller:
    c = controller()
    borrower(c, preemptible=True)
    c.apply_decisions([PlaceBorrower("small", {"job": (at(0, "n1"),)}, "big")])
    return c


def test_a_borrower_preempted_before_its_start_is_released_without_spending_an_attempt():
    # max_attempts = 1 and this is attempt 1: a counted release would fail the group.
    c = placed_borrower()
    written = c.apply_decisions([Preempt("small", ("n1",), "big")])
    assert event_names(written) == ["MemberReleased", "PlacementReleased"]
    why = "preempted for reservation big"
    assert {(e.note, e.at_ns) for e in written} == {(why, NOW_NS)}
    assert [e.reason for e in written] == [why, why]
    assert c.group("small").status == "PENDING"


def test_a_running_borrower_fails_by_its_policy_with_reason_preempted():
    c = placed_borrower()
    ready(c, "small/job", "data")
    start(c, "small/job")
    written = c.apply_decisions([Preempt("small", ("n1",), "big")])
    failed = [e for e in written if isinstance(e, ev.MemberFailed)]
    assert [(e.reason, e.index, e.action, e.at_ns) for e in failed] == [
        ("preempted", 0, "restart-member", NOW_NS)
    ]
    restarted = [e for e in written if isinstance(e, ev.MemberRestarted)]
    assert [(e.counted, e.restarts) for e in restarted] == [(False, 0)]
    assert {e.note for e in written} == {"preempted for reservation big"}


def replica_borrower(c: Controller) -> None:
    """ "sets": member "a" (one job on n9, never preempted) before "b" (three replicas,
    two of them on n1), every failure tolerated."""
    spec = (
        a_group("sets")
        .atomic()
        .with_member("a", preemptible=True)
        .with_member("b", replicas=3, min_running=1, preemptible=True)
        .with_rule("tolerate")
        .build()
    )
    c.submit(spec)
    where = {"a": (at(0, "n9"),), "b": (at(0, "n1"), at(1, "n2"), at(2, "n1"))}
    c.apply_decisions([PlaceBorrower("sets", where, "big")])


def test_every_task_on_the_nodes_is_preempted_lowest_first_and_the_others_run_on():
    c = controller()
    replica_borrower(c)
    start(c, "sets/a")
    start(c, "sets/b")
    written = c.apply_decisions([Preempt("sets", ("n1", "n7"), "big")])
    failed = [(e.reason, e.index) for e in written if isinstance(e, ev.MemberFailed)]
    assert failed == [("preempted", 0), ("preempted", 2)]
    a, b = c.members("sets")
    assert (a.status, a.assignments) == ("RUNNING", [at(0, "n9")])
    assert b.assignments == [at(1, "n2")]
    assert c.group("sets").status == "DEGRADED"


def test_a_member_started_group_preempts_its_members_not_yet_running_too():
    # The barrier is released (no claims) and "a" runs; "b" is READY, not yet started.
    c = controller()
    replica_borrower(c)
    start(c, "sets/a")
    assert [m.status for m in c.members("sets")] == ["RUNNING", "READY"]
    written = c.apply_decisions([Preempt("sets", ("n1",), "big")])
    failed = [(e.reason, e.index) for e in written if isinstance(e, ev.MemberFailed)]
    assert failed == [("preempted", None)]  # before the set runs, a replica fails it whole


def test_a_member_placed_again_in_a_running_group_is_preempted_too():
    c = controller()
    spec = (
        a_group("again")
        .atomic()
        .with_member("a", preemptible=True)
        .with_member("b", claims=("data",), preemptible=True)
        .with_rule("restart-member", members=("b",), reasons=("error",), max_restarts=1)
        .with_rule("tolerate", members=("b",))
        .build()
    )
    c.submit(spec)
    c.apply_decisions([PlaceBorrower("again", {"a": (at(0, "n9"),), "b": (at(0, "n1"),)}, "big")])
    ready(c, "again/b", "data")
    start(c, "again/a")
    start(c, "again/b")
    fail(c, "again/b", "error", exit_code=1)
    c.apply_decisions([PlaceMember("again", "b", (at(0, "n2"),))])
    assert [m.status for m in c.members("again")] == ["RUNNING", "PLACED"]
    written = c.apply_decisions([Preempt("again", ("n2",), "big")])
    failed = [(e.reason, e.action) for e in written if isinstance(e, ev.MemberFailed)]
    assert failed == [("preempted", "tolerate")]


def test_only_a_placed_or_started_group_is_preempted():
    c = controller()
    borrower(c, preemptible=True)
    refused(c, Preempt("small", ("n1",), "big"), "group small is PENDING: cannot preempt")


def test_a_job_that_already_succeeded_is_not_preempted_though_its_node_is():
    # A succeeded job's task keeps its node until the group ends; preempting that node
    # stops nothing that runs, so nothing is recorded.
    c = controller()
    spec = (
        a_group("two")
        .atomic()
        .with_member("a", preemptible=True)
        .with_member("b", preemptible=True)
        .build()
    )
    c.submit(spec)
    c.apply_decisions([PlaceBorrower("two", {"a": (at(0, "n9"),), "b": (at(0, "n1"),)}, "big")])
    start(c, "two/a")
    start(c, "two/b")
    succeed(c, "two/a")
    assert [m.status for m in c.members("two")] == ["SUCCEEDED", "RUNNING"]
    assert c.apply_decisions([Preempt("two", ("n9",), "big")]) == []
    assert [m.status for m in c.members("two")] == ["SUCCEEDED", "RUNNING"]
