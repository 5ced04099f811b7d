"""Error answers are RFC 9457 problem documents (`costart.rest.problems`): type, title,
status, detail, the field at fault as the client spells it, the older ``error`` and
``field`` members kept; 401 with a challenge; a hint for a TOML body sent untyped; a full
disk is 507 "out of space"; OpenAPI's examples are the server's own words."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from litestar.testing import TestClient

from costart.eventlog.errors import OutOfSpaceError
from costart.log_writer import ControllerStoppedError
from costart.projections import Views
from costart.rest.auth import Tokens, User
from costart.rest.http_app import create_app
from costart.rest.openapi import _EXAMPLES
from costart.rest.watch import WatchHub
from costart.service.controller_service import Service
from tests.builders import ManualClock, new_controller
from tests.rest.fake_placement import PlaceEverything

ADMIN = "admin-token-0123456789"
TOML_SPEC = b"""name = "t"
owner = "root"
[[members]]
name = "trainer"
kind = "job"
tasks = 1
shape = { gpu = 1 }
"""


@pytest.fixture
def api(tmp_path: Path) -> Iterator[TestClient]:
    controller = new_controller(ManualClock())
    controller.placement = PlaceEverything()
    hub = WatchHub.following(controller.read_events, controller.world)
    service = Service(controller, Views(tmp_path / "views"), watch=hub)
    tokens = Tokens({ADMIN: User(name="root", role="admin")})
    try:
        with TestClient(app=create_app(service, tokens, hub)) as client:
            client.headers["Authorization"] = f"Bearer {ADMIN}"
            yield client
    finally:
        service.close()


def _problem(response, status: int, slug: str) -> dict:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/problem+json"
    body = response.json()
    assert body["type"] == f"urn:costart:problem:{slug}"
    assert body["status"] == status and body["title"]
    assert body["detail"] == body["error"]  # the older member kept, word for word
    return body


def test_every_kind_of_error_is_a_problem_document(api):
    _problem(api.get("/v1/groups/nobody"), 404, "not-found")
    _problem(api.delete("/v1/groups"), 405, "method-not-allowed")
    bad = _problem(
        api.post("/v1/groups", json={"name": "g", "owner": "root", "members": []}),
        422,
        "invalid-spec",
    )
    assert bad["field"] == "members"
    typed = api.post("/v1/groups", content=b"x", headers={"Content-Type": "text/plain"})
    _problem(typed, 415, "unsupported-media-type")


def test_a_401_challenges_with_the_bearer_scheme(api):
    missing = api.get("/v1/groups", headers={"Authorization": ""})
    _problem(missing, 401, "unauthorized")
    assert missing.headers["www-authenticate"] == 'Bearer realm="costart"'
    wrong = api.get("/v1/groups", headers={"Authorization": "Bearer not-a-known-token"})
    _problem(wrong, 401, "unauthorized")
    assert wrong.headers["www-authenticate"] == 'Bearer realm="costart", error="invalid_token"'


def test_a_bad_query_parameter_is_named_as_the_client_sent_it(api):
    body = _problem(api.get("/v1/groups", params={"continue": "zz"}), 400, "bad-request")
    assert body["field"] == "continue"
    assert "continue:" in body["detail"] and "continue_token" not in body["detail"]
    limit = _problem(api.get("/v1/groups", params={"limit": "0"}), 400, "bad-request")
    assert limit["field"] == "limit"


def test_a_toml_spec_sent_without_a_content_type_is_told_what_to_send(api):
    body = _problem(api.post("/v1/groups", content=TOML_SPEC), 422, "invalid-spec")
    assert "a TOML spec needs Content-Type: application/toml" in body["detail"]
    labelled = api.post(
        "/v1/groups", content=TOML_SPEC, headers={"Content-Type": "application/toml"}
    )
    assert labelled.status_code == 201, labelled.text
    # JSON labelled as JSON gets no hint: the client said what it sent.
    said = api.post("/v1/groups", content=b"{x", headers={"Content-Type": "application/json"})
    assert "Content-Type" not in _problem(said, 422, "invalid-spec")["detail"]


def test_a_stop_caused_by_a_full_disk_is_known_as_out_of_space():
    stopped = ControllerStoppedError("the controller stopped")
    stopped.__cause__ = RuntimeError("write failed")
    stopped.__cause__.__cause__ = OutOfSpaceError("the store at s is out of space")
    assert stopped.out_of_space
    assert not ControllerStoppedError("fenced").out_of_space


def test_openapi_error_examples_are_problem_documents_in_the_servers_words(api):
    doc = api.get("/schema/openapi.json").json()
    seen = 0
    for item in doc["paths"].values():
        for operation in item.values():
            for code, response in operation.get("responses", {}).items():
                if not code.startswith(("4", "5")):
                    continue
                content = response["content"]["application/problem+json"]
                (example,) = content["examples"].values()
                value = example["value"]
                assert value["status"] == int(code) and value["type"].startswith("urn:costart:")
                assert (value["detail"], value.get("field")) == _EXAMPLES[int(code)]
                seen += 1
    assert seen > 20


def test_the_documented_examples_are_what_the_server_answers(api):
    """Each example is a real answer: the request that provokes it gets it word for word."""
    trainer = {"name": "trainer", "kind": "job", "tasks": 0, "shape": {"gpu": 8}}
    group = {"name": "grpo-003", "owner": "root", "members": [trainer]}
    answers = {422: api.post("/v1/groups", json=group)}
    trainer["tasks"] = 4
    assert api.post("/v1/groups", json=group).status_code == 201
    answers[409] = api.post("/v1/groups", json=group)
    answers[404] = api.get("/v1/groups/grpo-004")
    answers[400] = api.get("/v1/groups", params={"limit": "0"})
    answers[401] = api.get("/v1/groups", headers={"Authorization": ""})
    plain = {"Content-Type": "text/plain"}
    answers[415] = api.post("/v1/groups", content=b"x", headers=plain)
    for code, response in answers.items():
        body = response.json()
        assert response.status_code == code, body
        assert (body["detail"], body.get("field")) == _EXAMPLES[code], code
