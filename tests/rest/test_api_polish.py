"""The API as a client reads it: bearer security in OpenAPI, Location on 201, Allow on
405 and OPTIONS."""

from __future__ import annotations

import re

import httpx

from tests.rest.test_server import (
    ALICE,
    client,
    server,  # noqa: F401  (the module-scoped fixture)
    spec,
)


def test_openapi_declares_bearer_auth_and_exempts_health_and_metrics(server):  # noqa: F811
    url, _, _ = server
    doc = httpx.get(f"{url}/schema/openapi.json", timeout=10).json()
    assert doc["components"]["securitySchemes"]["bearer"]["type"] == "http"
    assert doc["components"]["securitySchemes"]["bearer"]["scheme"] == "bearer"
    assert doc["security"] == [{"bearer": []}]
    assert doc["paths"]["/healthz"]["get"]["security"] == [{}]
    assert doc["paths"]["/metrics"]["get"]["security"] == [{}]
    submit = doc["paths"]["/v1/groups"]["post"]
    assert "Location" in submit["responses"]["201"]["headers"]


def test_a_created_group_answers_with_its_location(server):  # noqa: F811
    url, _, _ = server
    alice = client(url, ALICE)
    created = alice.post("/v1/groups", json=spec("located"))
    assert created.status_code == 201
    assert created.headers["location"] == "/v1/groups/located"
    assert alice.get(created.headers["location"]).json()["group"]["name"] == "located"


def test_a_method_a_path_does_not_take_gets_405_with_allow(server):  # noqa: F811
    url, _, _ = server
    alice = client(url, ALICE)
    wrong = alice.delete("/v1/groups")
    assert wrong.status_code == 405
    assert set(wrong.headers["allow"].replace(" ", "").split(",")) >= {"GET", "POST"}
    assert "error" in wrong.json()


def test_options_answers_every_method_of_the_path_in_allow(server):  # noqa: F811
    url, _, _ = server
    doc = httpx.get(f"{url}/schema/openapi.json", timeout=10).json()
    for path, item in doc["paths"].items():
        documented = {m.upper() for m in item if m != "parameters"} | {"OPTIONS"}
        concrete = path.replace("{task}", "0").replace("{", "").replace("}", "")
        answer = httpx.options(f"{url}{concrete}", timeout=10)
        assert answer.status_code == 204, (path, answer.text)
        assert set(answer.headers["allow"].replace(" ", "").split(",")) == documented, path


def test_the_submit_body_schema_resolves_to_the_group_spec(server):  # noqa: F811
    url, _, _ = server
    doc = httpx.get(f"{url}/schema/openapi.json", timeout=10).json()
    body = doc["paths"]["/v1/groups"]["post"]["requestBody"]["content"]["application/json"]
    spec_schema = body["schema"]
    assert {"name", "owner", "members"} <= set(spec_schema["properties"])
    member = spec_schema["properties"]["members"]["items"]
    assert {"name", "kind", "shape"} <= set(member["properties"])

    # Every reference anywhere in the document resolves.
    def refs(node: object) -> list[str]:
        if isinstance(node, dict):
            found = [node["$ref"]] if isinstance(node.get("$ref"), str) else []
            return found + [r for value in node.values() for r in refs(value)]
        if isinstance(node, list):
            return [r for item in node for r in refs(item)]
        return []

    for ref in refs(doc):
        assert ref.removeprefix("#/components/schemas/") in doc["components"]["schemas"], ref


def test_the_docs_page_lists_every_operation_and_fetches_nothing(server):  # noqa: F811
    url, _, _ = server
    page = httpx.get(f"{url}/schema", timeout=10)
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    text = page.text
    assert "<script" not in text and "http://" not in text and "https://" not in text
    doc = httpx.get(f"{url}/schema/openapi.json", timeout=10).json()
    operations = [(m, p) for p, item in doc["paths"].items() for m in item if m != "parameters"]
    for method, path in operations:
        assert f'<td class="method">{method}</td><td class="path">{path}</td>' in text
    # Bodies and answers link to their schemas, every schema has its section, and no
    # link points nowhere.
    anchors = set(re.findall(r'id="([^"]+)"', text))
    links = set(re.findall(r'href="#([^"]+)"', text))
    assert links and links <= anchors, links - anchors
    assert {f"schema-{name}" for name in doc["components"]["schemas"]} <= anchors
    scale = next(row for row in text.split("<tr>") if "/members/{member}/scale<" in row)
    assert '<a href="#schema-ScaleRequest">ScaleRequest</a>' in scale  # its body
    assert "<code>replicas</code>" in text  # the body's fields, in its section
