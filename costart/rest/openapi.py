"""The OpenAPI document's parts the handlers cannot derive themselves.

The submit handler reads its body raw (so the spec parser, not the framework, names the
field at fault), so the group-spec document schema is declared here from the same msgspec
types `costart.domain.spec` decodes with. Every route also declares its error responses.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import msgspec
from litestar.openapi import ResponseSpec
from litestar.openapi.spec import (
    Example,
    Link,
    OpenAPIMediaType,
    OpenAPIResponse,
    Operation,
    Reference,
    RequestBody,
    Schema,
    SecurityScheme,
)

from costart.domain.spec import GroupDoc
from costart.domain.spec_reference import describe_schema
from costart.rest.models import ErrorBody
from costart.rest.problems import PROBLEM_JSON, problem
from costart.rest.spec_rules import with_rules

_REF = "#/components/schemas/{name}"
BEARER = "bearer"
SECURITY_SCHEMES: dict[str, SecurityScheme | Reference] = {
    BEARER: SecurityScheme(
        type="http",
        scheme="bearer",
        description="A token from the server's tokens file: names the user and role "
        "(owner, admin). Every operation needs one except /healthz and /metrics.",
    )
}
_KEYS = {"$ref": None, "not": "schema_not", "if": "schema_if", "else": "schema_else"}


def _convert(node: Any) -> Any:
    """A JSON-schema dict as litestar's `Schema`/`Reference` objects (recursively)."""
    if isinstance(node, list):
        return [_convert(item) for item in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        return Reference(ref=node["$ref"])
    fields: dict[str, Any] = {}
    for key, value in node.items():
        name = _KEYS.get(key) or "".join(("_" + ch.lower()) if ch.isupper() else ch for ch in key)
        if key == "properties":
            fields[name] = {prop: _convert(sub) for prop, sub in value.items()}
        elif key in ("default", "enum", "required", "const", "examples"):
            fields[name] = value
        else:
            fields[name] = _convert(value)
    return Schema(**fields)


def convert_schema(node: dict[str, Any]) -> Schema | Reference:
    """A JSON-schema dict as the framework's OpenAPI schema objects."""
    converted: Schema | Reference = _convert(node)
    return converted


def _inline(node: Any, components: dict[str, Any]) -> Any:
    """``node`` with every ``$ref`` to ``components`` replaced by the schema it names."""
    if isinstance(node, list):
        return [_inline(item, components) for item in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        return _inline(components[node["$ref"].removeprefix(_REF.format(name=""))], components)
    return {key: _inline(value, components) for key, value in node.items()}


def spec_schema() -> Schema | Reference:
    """The group-spec document's schema, whole. Inlined, not referenced: the framework
    writes the components section from its own registry and drops schemas given to it,
    which left the submit body pointing at a schema the document did not hold. The value
    rules JSON Schema can state are added (`costart.rest.spec_rules`), and every field's
    description from the spec reference (`costart.domain.spec_reference`)."""
    (root,), components = msgspec.json.schema_components([GroupDoc], ref_template=_REF)
    inlined = describe_schema(_inline(root, with_rules(components)))
    converted: Schema | Reference = _convert(inlined)
    return converted


GROUP_OPERATIONS: dict[str, tuple[str, str]] = {
    "GetGroup": ("/v1/groups/{name}", "get"),
    "GetMembers": ("/v1/groups/{name}/members", "get"),
    "GetEvents": ("/v1/groups/{name}/events", "get"),
    "Why": ("/v1/groups/{name}/why", "get"),
    "CancelGroup": ("/v1/groups/{name}/cancel", "post"),
    "DeleteGroup": ("/v1/groups/{name}", "delete"),
}
"""The per-group operations a created group's name leads to (OpenAPI links)."""


def _link(path: str, method: str, parameters: dict[str, Any], body: Any = None) -> Link:
    """A link to ``method path`` by ``operationRef`` (a JSON pointer into this document:
    ``/`` in a path is escaped as ``~1``)."""
    return Link(
        operation_ref="#/paths/" + path.replace("~", "~0").replace("/", "~1") + "/" + method,
        parameters=parameters,
        request_body=body,
        description=f"{method.upper()} {path}",
    )


def group_links() -> dict[str, Link | Reference]:
    """Links from a created group to each per-group operation, and to the operations on
    its first member (named in the request's spec): scale it, report its first claim and
    its first task (in the group's current attempt), watch the group."""
    name = "$response.body#/name"
    member = "$request.body#/members/0/name"
    attempt = {"attempt": "$response.body#/attempt"}
    links: dict[str, Link | Reference] = {
        op: _link(path, method, {"name": name}) for op, (path, method) in GROUP_OPERATIONS.items()
    }
    links["ScaleMember"] = _link(
        "/v1/groups/{name}/members/{member}/scale", "post", {"name": name, "member": member}
    )
    links["ReportClaim"] = _link(
        "/v1/groups/{name}/members/{member}/claims/{claim}",
        "post",
        {"name": name, "member": member, "claim": "$request.body#/members/0/claims/0"},
        attempt,
    )
    links["ReportTask"] = _link(
        "/v1/groups/{name}/members/{member}/tasks/{task}",
        "post",
        {"name": name, "member": member, "task": 0},
        attempt,
    )
    links["WatchGroup"] = _link("/v1/watch", "get", {"query.group": name})
    return links


def list_links() -> dict[str, Link | Reference]:
    """Links from a list of groups to the first group's detail and members."""
    name = {"name": "$response.body#/0/name"}
    return {
        "FirstGroup": _link("/v1/groups/{name}", "get", name),
        "FirstGroupMembers": _link("/v1/groups/{name}/members", "get", name),
    }


def node_links() -> dict[str, Link | Reference]:
    """Links from a group's members to the operations on the first member's first node,
    and to the report of its first task."""
    node = {"node": "$response.body#/0/nodes/0"}
    return {
        "NodeTasks": _link("/v1/nodes/{node}/tasks", "get", node),
        "Heartbeat": _link("/v1/nodes/{node}/heartbeat", "post", node),
        "NodeStatus": _link("/v1/nodes/{node}/status", "put", node),
        "WatchNode": _link("/v1/watch", "get", {"query.node": "$response.body#/0/nodes/0"}),
    }


def task_links() -> dict[str, Link | Reference]:
    """Links from a node's tasks to the report of the first one, in its attempt."""
    return {
        "ReportTask": _link(
            "/v1/groups/{name}/members/{member}/tasks/{task}",
            "post",
            {
                "name": "$response.body#/0/group",
                "member": "$response.body#/0/member",
                "task": "$response.body#/0/task",
            },
            {"attempt": "$response.body#/0/attempt"},
        )
    }


def struct_body(struct: type, description: str, example: Any) -> type[Operation]:
    """An operation class whose request body is ``struct``'s own JSON schema, as msgspec
    writes it: the framework's leaves out ``additionalProperties: false``, so the document
    allowed fields a ``forbid_unknown_fields`` struct refuses (found by schemathesis)."""
    (root,), components = msgspec.json.schema_components([struct], ref_template=_REF)
    schema = _inline(root, components)

    @dataclass
    class StructBodyOperation(Operation):
        def __post_init__(self) -> None:
            self.request_body = RequestBody(
                required=True,
                description=description,
                content={
                    "application/json": OpenAPIMediaType(
                        schema=convert_schema(schema), examples={"example": Example(value=example)}
                    )
                },
            )

    return StructBodyOperation


def linked(links: Any, status: str = "200") -> type[Operation]:
    """An operation class whose ``status`` response carries ``links()``."""

    @dataclass
    class LinkedOperation(Operation):
        def __post_init__(self) -> None:
            answer = (self.responses or {}).get(status)
            if isinstance(answer, OpenAPIResponse):
                answer.links = links()

    return LinkedOperation


SPEC_EXAMPLE = Example(
    summary="a trainer job and a rollout service that start together",
    value={
        "name": "grpo-run-42",
        "owner": "alice",
        "priority": 10,
        "placement": {"mode": "reserve", "timeout": "15m"},
        "barrier": {"timeout": "10m"},
        "failure": {
            "default": "fail-group",
            "rules": [{"members": ["rollout"], "reasons": ["oom"], "action": "restart-member"}],
        },
        "members": [
            {
                "name": "trainer",
                "kind": "job",
                "tasks": 2,
                "shape": {"gpu": 8, "gpu_type": "H100"},
                "claims": ["gpus"],
            },
            {
                "name": "rollout",
                "kind": "replica-set",
                "replicas": 2,
                "min_running": 1,
                "shape": {"gpu": 1},
                "claims": ["gpus"],
            },
        ],
    },
)


@dataclass
class SubmitOperation(Operation):
    """The submit operation with its request body: a group spec document (JSON; TOML with
    ``Content-Type: application/toml`` is accepted too), and links from the created group
    to the operations on it."""

    def __post_init__(self) -> None:
        document = spec_schema()
        self.request_body = RequestBody(
            required=True,
            description="the group spec (docs/design.md §3.1)",
            content={
                "application/json": OpenAPIMediaType(
                    schema=document, examples={"rl-post-training": SPEC_EXAMPLE}
                )
            },
        )
        created = (self.responses or {}).get("201")
        if isinstance(created, OpenAPIResponse):
            created.links = group_links()


_DESCRIPTIONS = {
    400: "a request the API cannot read",
    401: "no or an unknown bearer token (with a `WWW-Authenticate: Bearer` challenge)",
    403: "the caller may not act on this group",
    404: "no such group",
    409: "conflicts with the group's state or name",
    413: "the body is over the size limit",
    415: "the body's Content-Type is not one the route reads",
    422: "the spec is invalid; `field` names the field",
    503: "the server cannot answer now (a log read: too many reads are waiting at once)",
    504: "the node's agent did not answer in time (it may be down or cut off)",
}
_EXAMPLES: dict[int, tuple[str, str | None]] = {
    400: ("invalid request: limit: Expected `int` >= 1", "limit"),
    401: ("missing or unknown bearer token", None),
    403: ("bob may not cancel groups owned by alice", None),
    404: ("no group named 'grpo-004'", None),
    409: ("a live group named 'grpo-003' already exists", None),
    413: ("Request Entity Too Large", None),
    415: ("Content-Type 'text/plain': a spec is application/json or application/toml", None),
    422: ("members[0].tasks: must be a positive count (got 0)", "members[0].tasks"),
    503: ("too many log reads at once (256)", None),
    504: ("the agent of node n1 did not answer within 10s", None),
}
"""A real answer of each status, as the server words it (checked by the tests)."""


def error_example(code: int) -> Example:
    """The documented example answer of an error status: a problem document."""
    detail, field = _EXAMPLES[code]
    return Example(value=msgspec.to_builtins(problem(code, detail, field)))


def errors(*codes: int) -> dict[int, ResponseSpec]:
    """Error responses for a route's OpenAPI entry, all RFC 9457 problem documents
    (``application/problem+json``) with a worded example."""
    return {
        code: ResponseSpec(
            data_container=ErrorBody,
            description=_DESCRIPTIONS[code],
            media_type=PROBLEM_JSON,
            examples=[error_example(code)],
        )
        for code in codes
    }
