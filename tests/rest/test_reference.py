"""The API reference read out of an OpenAPI document (`costart.rest.reference`), which
both the `/schema` page and the docs site's REST page are written from."""

from __future__ import annotations

from typing import Any

import pytest

from costart.rest import reference

SCALE = {
    "title": "ScaleRequest",
    "type": "object",
    "properties": {"replicas": {"type": "integer", "minimum": 1, "description": "how many"}},
    "required": ["replicas"],
}
READY = {
    "title": "ClaimReady",
    "type": "object",
    "properties": {
        "status": {"const": "READY"},
        "reason": {"anyOf": [{"type": "string"}, {"type": "null"}]},
    },
    "required": ["status"],
}


def document(**extra: Any) -> dict[str, Any]:
    problem = {
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Problem"}}}
    }
    return {
        "paths": {
            "/v1/groups/{name}/scale": {
                "post": {
                    "summary": "Scale",
                    "parameters": [
                        {
                            "name": "name",
                            "in": "path",
                            "required": True,
                            "schema": {"type": "string"},
                        }
                    ],
                    "requestBody": {"content": {"application/json": {"schema": SCALE}}},
                    "responses": {"422": problem, "200": {"description": "scaled"}},
                },
            },
            "/healthz": {"get": {"security": [{}], "responses": {"200": {"description": "up"}}}},
            "/v1/groups": {
                # The submit's body is a whole spec: its objects are not listed.
                "post": {
                    "requestBody": {
                        "content": {
                            "application/json": {
                                "schema": {"title": "Topology", "properties": {"x": {}}}
                            }
                        }
                    }
                },
                "get": {
                    "responses": {
                        "200": {"content": {"application/json": {"schema": {"oneOf": [READY]}}}}
                    }
                },
            },
        },
        "components": {
            "schemas": {
                "Problem": {"type": "object", "properties": {"title": {"type": "string"}}},
                **extra,
            }
        },
    }


def test_operations_in_path_then_method_order_with_their_parts() -> None:
    ops = reference.operations(document())
    assert [(op.method, op.path) for op in ops] == [
        ("get", "/healthz"),
        ("get", "/v1/groups"),
        ("post", "/v1/groups"),
        ("post", "/v1/groups/{name}/scale"),
    ]
    healthz, listing, submit, scale = ops
    assert not healthz.needs_token and scale.needs_token
    assert submit.body is not None and submit.body.is_group_spec
    assert scale.body is not None and not scale.body.is_group_spec
    assert scale.body.schema is SCALE
    assert [p.name for p in scale.parameters] == ["name"] and scale.parameters[0].required
    assert [(a.status, a.schema is None) for a in scale.answers] == [("200", True), ("422", False)]
    assert listing.body is None


def test_schemas_list_named_and_written_out_objects_but_not_the_specs() -> None:
    found = {s.name: s for s in reference.schemas(document())}
    assert sorted(found) == ["ClaimReady", "Problem", "ScaleRequest"]  # not the spec's Topology
    assert [(f.name, f.required, f.description) for f in found["ScaleRequest"].fields] == [
        ("replicas", True, "how many")
    ]
    assert [(f.name, f.required) for f in found["ClaimReady"].fields] == [
        ("status", True),
        ("reason", False),
    ]


def test_an_object_written_out_stands_for_the_named_schema_of_its_title() -> None:
    loose = {
        "title": "ScaleRequest",
        "type": "object",
        "properties": {"replicas": {"type": "integer"}},
    }
    [scale] = [
        s for s in reference.schemas(document(ScaleRequest=loose)) if s.name == "ScaleRequest"
    ]
    assert scale.fields[0].schema == {"type": "integer", "minimum": 1, "description": "how many"}


def test_two_different_objects_under_one_title_are_refused() -> None:
    doc = document()
    other = dict(SCALE, properties={"count": {"type": "integer"}})
    doc["paths"]["/v1/other"] = {
        "put": {"requestBody": {"content": {"application/json": {"schema": other}}}}
    }
    with pytest.raises(ValueError, match="two different objects 'ScaleRequest'"):
        reference.schemas(doc)


@pytest.mark.parametrize(
    ("node", "words"),
    [
        ({"$ref": "#/components/schemas/Problem"}, "<Problem>"),
        (SCALE, "<ScaleRequest>"),
        ({"const": "READY"}, "'READY'"),
        ({"enum": ["up", None]}, "'up' | 'null'"),
        ({"anyOf": [{"type": "string"}, {"type": "null"}]}, "string or null"),
        ({"type": "array", "items": {"$ref": "#/x/Event"}}, "array of <Event>"),
        ({"type": ["integer", "null"]}, "integer or null"),
        ({}, "object"),
        (None, ""),
    ],
)
def test_types_in_words(node: Any, words: str) -> None:
    assert reference.type_text(node, lambda name: f"<{name}>", lambda v: f"'{v}'") == words
