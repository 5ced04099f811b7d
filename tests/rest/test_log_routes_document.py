"""The log relay's routes in the OpenAPI document (ADR 0084): described, their
parameters' bounds stated (the framework leaves out a bound of 0), an example answer
and an example agent's post."""

from __future__ import annotations

import httpx

from tests.rest.test_server import server  # noqa: F401  (the module-scoped fixture)


def test_the_log_routes_are_documented_with_bounds_and_an_example(server):  # noqa: F811
    url, _, _ = server
    doc = httpx.get(f"{url}/schema/openapi.json", timeout=10).json()
    read = doc["paths"]["/v1/groups/{name}/members/{member}/tasks/{task}/log"]["get"]
    assert "owner and admins only" in read["description"]
    params = {p["name"]: p for p in read["parameters"]}
    for name in ("attempt", "offset", "tail", "wait"):
        assert params[name]["description"] and params[name]["schema"], name
        assert _bound(params[name]["schema"], "minimum") == 0, name
    assert _bound(params["wait"]["schema"], "maximum") == 30
    (media,) = read["responses"]["200"]["content"].values()
    example = media["examples"]["running"]["value"]
    assert example["text"].startswith("step 1") and example["next_offset"] == 38
    assert {"401", "403", "404", "409", "422", "503", "504"} <= set(read["responses"])
    answer = doc["paths"]["/v1/nodes/{node}/log-reads"]["post"]
    body = answer["requestBody"]["content"]["application/json"]
    assert body["examples"]["example"]["value"]["pieces"][0]["data"] == "c3RlcCAxCg=="
    assert (
        "/v1/nodes/{node}/log-reads" in doc["paths"]
        and "get" in doc["paths"]["/v1/nodes/{node}/log-reads"]
    )


def _bound(schema: dict, key: str) -> object:
    """``key`` of a parameter's schema, or of its non-null alternative."""
    if key in schema:
        return schema[key]
    for option in schema.get("oneOf", []) + schema.get("anyOf", []):
        if key in option:
            return option[key]
    return None
