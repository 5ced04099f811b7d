"""The documented report bodies (`costart.rest.report_schemas`) and the server's checks
(`ClaimReport`/`TaskReport` decoding, `check_claim`, `check_task`) agree on each body; a
report's task that is not placed yet is a conflict, not a missing resource."""

from __future__ import annotations

from typing import Any

import jsonschema_rs
import msgspec
import pytest

from costart.domain.errors import Conflict, NotFound, SpecError
from costart.domain.limits import MAX_REASON_TEXT
from costart.projections import GroupView, MemberView
from costart.rest.report_schemas import claim_report_schema, task_report_schema
from costart.service.host_reports import (
    EXIT_CODES,
    MAX_ATTEMPT,
    ClaimReport,
    Subject,
    TaskReport,
    check_claim,
    check_task,
)

CLAIMS: list[tuple[dict[str, Any], bool]] = [
    ({"attempt": 1, "status": "READY"}, True),
    ({"attempt": 1, "status": "READY", "reason": "bound"}, True),
    ({"attempt": 1, "status": "READY", "reason": None}, True),
    ({"attempt": 1, "status": "FAILED", "reason": "no such volume"}, True),
    ({"attempt": 1, "status": "FAILED"}, False),
    ({"attempt": 1, "status": "FAILED", "reason": ""}, False),
    ({"attempt": 1, "status": "FAILED", "reason": None}, False),
    ({"attempt": 1, "status": "FAILED", "reason": "r" * MAX_REASON_TEXT}, True),
    ({"attempt": 1, "status": "FAILED", "reason": "r" * (MAX_REASON_TEXT + 1)}, False),
    ({"attempt": MAX_ATTEMPT, "status": "READY"}, True),
    ({"attempt": MAX_ATTEMPT + 1, "status": "READY"}, False),
    ({"attempt": 0, "status": "READY"}, False),
    ({"attempt": 1, "status": "BOUND"}, False),
    ({"attempt": 1, "status": "READY", "extra": 1}, False),
]
TASKS: list[tuple[dict[str, Any], bool]] = [
    ({"attempt": 1, "event": "started"}, True),
    ({"attempt": 1, "event": "succeeded", "reason": None, "exit_code": None}, True),
    ({"attempt": 1, "event": "started", "reason": "oom"}, False),
    ({"attempt": 1, "event": "succeeded", "exit_code": 0}, False),
    ({"attempt": 1, "event": "exited", "reason": "oom"}, True),
    ({"attempt": 1, "event": "exited", "reason": "error", "exit_code": EXIT_CODES[0]}, True),
    ({"attempt": 1, "event": "exited", "reason": "error", "exit_code": EXIT_CODES[1]}, True),
    ({"attempt": 1, "event": "exited", "reason": "error", "exit_code": EXIT_CODES[1] + 1}, False),
    ({"attempt": 1, "event": "exited"}, False),
    ({"attempt": 1, "event": "exited", "reason": "any"}, False),
    ({"attempt": 1, "event": "crashed"}, False),
]


def _server_accepts(body: dict[str, Any], struct: type, check: Any) -> bool:
    try:
        check(msgspec.convert(body, struct))
    except (msgspec.ValidationError, SpecError):
        return False
    return True


@pytest.mark.parametrize(("body", "valid"), CLAIMS)
def test_a_claim_report_is_valid_for_the_document_exactly_when_the_server_takes_it(body, valid):
    assert jsonschema_rs.validator_for(claim_report_schema()).is_valid(body) is valid
    assert _server_accepts(body, ClaimReport, check_claim) is valid


@pytest.mark.parametrize(("body", "valid"), TASKS)
def test_a_task_report_is_valid_for_the_document_exactly_when_the_server_takes_it(body, valid):
    assert jsonschema_rs.validator_for(task_report_schema()).is_valid(body) is valid
    assert _server_accepts(body, TaskReport, check_task) is valid


def _subject(desired: int) -> Subject:
    group = msgspec.convert(
        {
            "id": "g",
            "name": "g1",
            "owner": "alice",
            "priority": 0,
            "submission_seq": 1,
            "mode": "reserve",
            "state": "PENDING",
            "attempt": 0,
        },
        GroupView,
    )
    member = msgspec.convert(
        {
            "group": "g1",
            "group_id": "g",
            "name": "trainer",
            "index": 0,
            "kind": "job",
            "owner": "alice",
            "profile": "",
            "state": "PENDING",
            "desired": desired,
            "min_start": desired,
            "min_running": desired,
        },
        MemberView,
    )
    return Subject(group, member, ())


def test_an_unplaced_task_the_member_has_is_a_conflict_one_it_lacks_is_not_found():
    with pytest.raises(Conflict, match="task 1 of member g1/trainer is not placed"):
        _subject(desired=2).node_of(1)
    with pytest.raises(NotFound, match="has no task 2"):
        _subject(desired=2).node_of(2)
