"""The OpenAPI bodies of the claim and task reports, with the rules between their fields.

`ClaimReport` and `TaskReport` are flat structs (the handlers' `check_claim`/`check_task`
answer 422 naming ``reason``), but which fields a report may carry depends on its
``status`` or ``event``. The document states it as ``oneOf`` per value, so a body the
document calls valid is one the server takes, and the reverse (ADR 0049).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, get_args

from litestar.openapi.spec import Example, OpenAPIMediaType, Operation, RequestBody

from costart.domain import limits
from costart.rest.openapi import convert_schema
from costart.service.host_reports import EXIT_CODES, MAX_ATTEMPT, ExitReason

_ATTEMPT = {
    "type": "integer",
    "minimum": 1,
    "maximum": MAX_ATTEMPT,
    "description": "the placement attempt the report is about, from 1 (an older one writes "
    "nothing)",
}
_NULL = {"type": "null"}


def _variant(
    title: str, required: list[str], properties: dict[str, Any], description: str
) -> dict[str, Any]:
    return {
        "title": title,
        "description": description,
        "type": "object",
        "properties": {"attempt": _ATTEMPT, **properties},
        "required": ["attempt", *required],
        "additionalProperties": False,
    }


def claim_report_schema() -> dict[str, Any]:
    """READY (a reason is allowed), or FAILED with a reason."""
    reason = {"type": "string", "maxLength": limits.MAX_REASON_TEXT}
    return {
        "oneOf": [
            _variant(
                "ClaimReady",
                ["status"],
                {"status": {"const": "READY"}, "reason": {"anyOf": [reason, _NULL]}},
                "the claim is READY",
            ),
            _variant(
                "ClaimFailed",
                ["status", "reason"],
                {"status": {"const": "FAILED"}, "reason": {**reason, "minLength": 1}},
                "the claim failed, and why",
            ),
        ]
    }


def task_report_schema() -> dict[str, Any]:
    """started or succeeded (no reason, no exit code), or exited with a reason."""
    exit_code = {"type": "integer", "minimum": EXIT_CODES[0], "maximum": EXIT_CODES[1]}
    return {
        "oneOf": [
            _variant(
                "TaskStartedOrSucceeded",
                ["event"],
                {"event": {"enum": ["started", "succeeded"]}, "reason": _NULL, "exit_code": _NULL},
                "the task started, or succeeded",
            ),
            _variant(
                "TaskExited",
                ["event", "reason"],
                {
                    "event": {"const": "exited"},
                    "reason": {"enum": list(get_args(ExitReason))},
                    "exit_code": {"anyOf": [exit_code, _NULL]},
                },
                "the task exited: why, and its exit code when it has one",
            ),
        ]
    }


def _body(schema: dict[str, Any], description: str, example: dict[str, Any]) -> RequestBody:
    media = OpenAPIMediaType(
        schema=convert_schema(schema), examples={"example": Example(value=example)}
    )
    return RequestBody(required=True, description=description, content={"application/json": media})


@dataclass
class ClaimReportOperation(Operation):
    def __post_init__(self) -> None:
        example = {"attempt": 1, "status": "READY"}
        self.request_body = _body(claim_report_schema(), "a claim's outcome", example)


@dataclass
class TaskReportOperation(Operation):
    def __post_init__(self) -> None:
        example = {"attempt": 1, "event": "started"}
        self.request_body = _body(task_report_schema(), "what happened to the task", example)
