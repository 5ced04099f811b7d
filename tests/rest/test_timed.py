"""REST bodies carry RFC 3339 times beside the integer ns fields, and open deadlines."""

from __future__ import annotations

import re

from costart.projections import GroupView, MemberView
from costart.rest.timed import Deadline, group_doc, member_doc
from tests.rest.test_server import (
    ALICE,
    client,
    server,  # noqa: F401  (the module-scoped fixture)
    spec,
    wait_for_state,
)

S = 10**9
T0 = 1_796_134_690 * S  # 2026-12-01T14:18:10Z
RFC3339 = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z")


def a_group(**fields: object) -> GroupView:
    base: dict[str, object] = dict(
        id="g",
        name="g",
        owner="alice",
        priority=0,
        submission_seq=1,
        mode="reserve",
        state="RESERVING",
        attempt=1,
        submitted_at_ns=T0,
        last_event_at_ns=T0 + 5 * S,
    )
    base.update(fields)
    return GroupView(**base)  # type: ignore[arg-type]


def test_every_time_has_its_rfc3339_string_and_unset_ones_are_null_beside_null() -> None:
    doc = group_doc(a_group(reservation_deadline_ns=T0 + 900 * S), now_ns=T0 + 873 * S)
    assert doc.submitted_at == "2026-12-01T14:18:10.000000000Z"
    assert doc.last_event_at == "2026-12-01T14:18:15.000000000Z"
    assert doc.reservation_deadline == "2026-12-01T14:33:10.000000000Z"
    assert (doc.placed_at_ns, doc.placed_at) == (None, None)
    assert (doc.retry_at_ns, doc.retry_at) == (0, None)  # never released
    assert doc.deadlines == (
        Deadline(
            kind="reservation",
            at_ns=T0 + 900 * S,
            at="2026-12-01T14:33:10.000000000Z",
            left_ns=27 * S,
        ),
    )


def test_a_released_group_lists_its_retry_time_with_the_time_left() -> None:
    doc = group_doc(a_group(state="PENDING", retry_at_ns=T0 + 100 * S), now_ns=T0 + 60 * S)
    assert [(d.kind, d.left_ns) for d in doc.deadlines] == [("retry", 40 * S)]
    assert doc.retry_at == "2026-12-01T14:19:50.000000000Z"


def test_a_member_row_gets_its_times() -> None:
    member = MemberView(
        group="g", group_id="g", name="m", index=0, kind="job", owner="alice", profile="",
        state="RUNNING", desired=1, min_start=1, min_running=1, started_at_ns=T0,
    )  # fmt: skip
    doc = member_doc(member)
    assert (doc.started_at, doc.ended_at) == ("2026-12-01T14:18:10.000000000Z", None)


def test_the_server_answers_with_times_beside_ns(server):  # noqa: F811
    url, _, _ = server
    alice = client(url, ALICE)
    created = alice.post("/v1/groups", json=spec("timed")).json()
    assert RFC3339.fullmatch(created["submitted_at"])
    detail = wait_for_state(alice, "timed", "RUNNING")
    group = detail["group"]
    for name in ("submitted_at", "placed_at", "started_at", "last_event_at"):
        assert RFC3339.fullmatch(group[name]), (name, group[name])
    assert group["ended_at_ns"] is None and group["ended_at"] is None
    assert all(RFC3339.fullmatch(e["at"]) for e in detail["events"])
    events = alice.get("/v1/groups/timed/events").json()
    assert all(RFC3339.fullmatch(e["at"]) for e in events)
