"""The API's reference read out of its OpenAPI document: operations (parameters, body,
answers, whether a token is needed) and schemas (fields, types, required), in a fixed
order. Both the page `serve` renders at ``/schema`` and the docs site's REST reference
are written from this one reading, so the two cannot say different things."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

METHODS = ("get", "post", "put", "patch", "delete")
# The submit's body is a whole group spec, which has its own reference (the docs site's
# spec page and `costart explain`); its nested objects are not listed here.
SUBMIT = ("post", "/v1/groups")


@dataclass(frozen=True)
class Parameter:
    name: str
    where: str  # path, query or header
    schema: dict[str, Any]
    required: bool
    description: str


@dataclass(frozen=True)
class Answer:
    status: str
    description: str
    schema: dict[str, Any] | None  # the first content type's schema; None: no body


@dataclass(frozen=True)
class Body:
    content_types: tuple[str, ...]
    schema: dict[str, Any]
    description: str
    is_group_spec: bool


@dataclass(frozen=True)
class Operation:
    method: str
    path: str
    summary: str
    description: str
    parameters: tuple[Parameter, ...]
    body: Body | None
    answers: tuple[Answer, ...]
    needs_token: bool


@dataclass(frozen=True)
class Field:
    name: str
    schema: dict[str, Any]
    required: bool
    description: str


@dataclass(frozen=True)
class Schema:
    name: str
    description: str
    fields: tuple[Field, ...]


def _first_schema(content: dict[str, Any]) -> dict[str, Any] | None:
    for media in content.values():
        schema = media.get("schema")
        return schema if isinstance(schema, dict) else None
    return None


def _operation(path: str, method: str, op: dict[str, Any]) -> Operation:
    parameters = tuple(
        Parameter(
            name=p["name"],
            where=p.get("in", ""),
            schema=p.get("schema", {}),
            required=bool(p.get("required")),
            description=p.get("description", ""),
        )
        for p in op.get("parameters", [])
    )
    raw_body = op.get("requestBody")
    body = None
    if raw_body:
        content = raw_body.get("content", {})
        body = Body(
            content_types=tuple(content),
            schema=_first_schema(content) or {},
            description=raw_body.get("description", ""),
            is_group_spec=(method, path) == SUBMIT,
        )
    answers = tuple(
        Answer(status, answer.get("description", ""), _first_schema(answer.get("content", {})))
        for status, answer in sorted(op.get("responses", {}).items())
    )
    return Operation(
        method=method,
        path=path,
        summary=op.get("summary", ""),
        description=op.get("description", ""),
        parameters=parameters,
        body=body,
        answers=answers,
        # An operation open to anyone states an empty requirement (``security: [{}]``).
        needs_token=op.get("security") != [{}],
    )


def operations(doc: dict[str, Any]) -> list[Operation]:
    """Every operation, by path, then in `METHODS` order."""
    found = []
    for path, item in sorted(doc.get("paths", {}).items()):
        found += [_operation(path, m, item[m]) for m in METHODS if m in item]
    return found


def _is_inline_object(node: Any) -> bool:
    """A titled object written out where it is used (a body's choices), which the
    reference lists under its title as it lists the named schemas."""
    return isinstance(node, dict) and "title" in node and "properties" in node


def _inline_objects(node: Any) -> list[tuple[str, dict[str, Any]]]:
    if isinstance(node, list):
        return [found for item in node for found in _inline_objects(item)]
    if not isinstance(node, dict):
        return []
    own = [(node["title"], node)] if _is_inline_object(node) else []
    return own + [found for value in node.values() for found in _inline_objects(value)]


def _schema(name: str, schema: dict[str, Any]) -> Schema:
    required = set(schema.get("required", []))
    fields = tuple(
        Field(prop, sub, prop in required, sub.get("description", ""))
        for prop, sub in (schema.get("properties") or {}).items()
    )
    return Schema(name, schema.get("description", ""), fields)


def schemas(doc: dict[str, Any]) -> list[Schema]:
    """Every named schema and every titled object a request body (but the submit's) or
    an answer writes out, by name, fields in the document's order. An object written
    out stands for a named schema of its title (it is what a body is checked against,
    bounds and all); two different objects under one title would make one anchor mean
    two things, and are refused."""
    named: dict[str, dict[str, Any]] = dict(doc.get("components", {}).get("schemas", {}))
    written_out: list[Any] = []
    for path, item in doc.get("paths", {}).items():
        for method in (m for m in METHODS if m in item):
            if (method, path) != SUBMIT:
                written_out.append(item[method].get("requestBody"))
            written_out.append(item[method].get("responses"))
    written: dict[str, dict[str, Any]] = {}
    for title, node in _inline_objects(written_out):
        if written.setdefault(title, node) != node:
            raise ValueError(f"the OpenAPI document writes two different objects {title!r}")
    named.update(written)
    return [_schema(name, schema) for name, schema in sorted(named.items())]


def type_text(node: Any, link: Callable[[str], str], literal: Callable[[str], str]) -> str:
    """A schema's type in words: ``link(name)`` for a named schema (or a titled object
    written out, see `schemas`), ``literal(value)`` for a constant and each value of an
    enumeration (``null`` for None), ``array of ...``, ``... or ...``."""
    if not isinstance(node, dict):
        return ""
    if "$ref" in node:
        return link(node["$ref"].rsplit("/", 1)[-1])
    if _is_inline_object(node):
        return link(node["title"])
    if "const" in node:
        return literal("null" if node["const"] is None else str(node["const"]))
    if "anyOf" in node or "oneOf" in node:
        choices: list[Any] = node.get("anyOf") or node.get("oneOf") or []
        return " or ".join(type_text(n, link, literal) for n in choices)
    kind = node.get("type", "object")
    if isinstance(kind, list):
        kind = " or ".join(kind)
    if kind == "array":
        return f"array of {type_text(node.get('items', {}), link, literal)}"
    if "enum" in node:
        return " | ".join(literal("null" if v is None else str(v)) for v in node["enum"])
    return str(kind)
