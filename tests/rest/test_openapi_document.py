"""The OpenAPI document as a reader or a fuzzer uses it: a description on every field
of every model, and links from `POST /v1/groups` to every per-group operation, each
resolving to an operation of the document that takes the created group's name."""

from __future__ import annotations

import httpx

from costart.rest.openapi import GROUP_OPERATIONS
from tests.rest.test_server import (
    ALICE,
    client,
    server,  # noqa: F401  (the module-scoped fixture)
    spec,
)


def resolve(doc: dict, pointer: str) -> dict:
    """A local JSON pointer (``#/a/b~1c``) in ``doc``."""
    node = doc
    for part in pointer.removeprefix("#/").split("/"):
        node = node[part.replace("~1", "/").replace("~0", "~")]
    return node


def test_a_created_group_links_to_each_operation_on_it(server):  # noqa: F811
    url, _, _ = server
    doc = httpx.get(f"{url}/schema/openapi.json", timeout=10).json()
    links = doc["paths"]["/v1/groups"]["post"]["responses"]["201"]["links"]
    per_group = {
        (path, method)
        for path, operations in doc["paths"].items()
        if path.startswith("/v1/groups/{name}") and path.count("{") == 1
        for method in operations
        if method in ("get", "post", "put", "delete")
    }
    assert {GROUP_OPERATIONS[name] for name in links if name in GROUP_OPERATIONS} == per_group
    for link in (links[name] for name in GROUP_OPERATIONS):
        operation = resolve(doc, link["operationRef"])
        assert {p["name"] for p in operation["parameters"] if p["in"] == "path"} == {"name"}
        assert link["parameters"] == {"name": "$response.body#/name"}

    # The link's runtime expression really finds the name in a created group's body.
    created = client(url, ALICE).post("/v1/groups", json=spec("linked"))
    name = resolve(created.json(), "#/name")
    assert client(url, ALICE).get(f"/v1/groups/{name}").status_code == 200


def test_every_field_of_every_model_is_described(server):  # noqa: F811
    url, _, _ = server
    doc = httpx.get(f"{url}/schema/openapi.json", timeout=10).json()
    schemas = doc["components"]["schemas"]
    fields = [
        (name, field, sub)
        for name, schema in schemas.items()
        for field, sub in (schema.get("properties") or {}).items()
    ]
    assert len(schemas) >= 15 and len(fields) >= 150
    assert [f"{name}.{field}" for name, field, sub in fields if not sub.get("description")] == []
    group = schemas["TimedGroup"]["properties"]
    assert group["labels"]["description"] == "the group's labels, key to value"
