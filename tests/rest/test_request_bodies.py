"""What the API reads from a body and how it refuses one it cannot read
(`costart.rest.request_bodies`): a type the route does not read is 415, a JSON body the
parser cannot read is 400 naming why, a body sent to a route that reads none is 400;
never a 500, and nothing is written. The property test over many more such bodies, on a
real server, is `tests/test_malformed_input.py`."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from litestar.testing import TestClient

from costart.projections import Views
from costart.rest.auth import Tokens, User
from costart.rest.http_app import create_app
from costart.rest.request_bodies import media_subtype
from costart.rest.watch import WatchHub
from costart.service.controller_service import Service
from tests.builders import ManualClock, new_controller
from tests.rest.fake_placement import PlaceEverything

ADMIN = "admin-token-0123456789"
GROUP = {
    "name": "g",
    "owner": "root",
    "members": [
        {"name": "trainer", "kind": "job", "tasks": 2, "shape": {"gpu": 4}, "claims": ["gpus"]},
        {"name": "rollout", "kind": "replica-set", "replicas": 2, "shape": {"gpu": 1}},
    ],
}
NODE = "g-trainer-n0"
ROUTES = [
    ("POST", "/v1/groups/g/members/trainer/tasks/0", b'{"attempt": 1, "event": "started"}'),
    ("POST", "/v1/groups/g/members/trainer/claims/gpus", b'{"attempt": 1, "status": "READY"}'),
    ("POST", "/v1/groups/g/members/rollout/scale", b'{"replicas": 3}'),
    ("PUT", f"/v1/nodes/{NODE}/status", b'{"status": "drained"}'),
]


@pytest.fixture
def api(tmp_path: Path) -> Iterator[tuple[TestClient, Service]]:
    """A client of the app, as the admin, with the group ``g`` placed."""
    controller = new_controller(ManualClock())
    controller.placement = PlaceEverything()
    hub = WatchHub.following(controller.read_events, controller.world)
    service = Service(controller, Views(tmp_path / "views"), watch=hub)
    tokens = Tokens({ADMIN: User(name="root", role="admin")})
    try:
        with TestClient(app=create_app(service, tokens, hub)) as client:
            client.headers["Authorization"] = f"Bearer {ADMIN}"
            assert client.post("/v1/groups", json=GROUP).status_code == 201
            service.step()  # placed
            yield client, service
    finally:
        service.close()


def _position(service: Service) -> int:
    return service.controller.world.position


@pytest.mark.parametrize(
    ("content_type", "subtype"),
    [
        ("", ""),
        ("application/json", "json"),
        ("Application/JSON; charset=utf-8", "json"),
        ("application/problem+json", "json"),
        ("application/toml", "toml"),
        ("text/plain", "plain"),
        ("application/x-www-form-urlencoded", "x-www-form-urlencoded"),
    ],
)
def test_the_format_a_content_type_names(content_type, subtype):
    assert media_subtype(content_type) == subtype


@pytest.mark.parametrize(("method", "path", "good"), ROUTES, ids=[r[1] for r in ROUTES])
@pytest.mark.parametrize(
    ("body", "content_type", "status", "words"),
    [
        (None, "application/toml", 415, "Content-Type 'application/toml': send application/json"),
        (None, "text/plain", 415, "send application/json"),
        (b"[" * 1000 + b"]" * 1000, "application/json", 400, "not valid JSON: nested too deeply"),
        (b'{"attempt": 1e400}', "application/json", 400, "not valid JSON: Number out of range"),
        (b'{"attempt": 1, "sta', "application/json", 400, "not valid JSON: Input data was trunc"),
        (b"", "application/json", 400, "the request needs a JSON body"),
    ],
    ids=["toml type", "text type", "deep", "1e400", "truncated", "empty"],
)
def test_a_body_route_refuses_what_it_cannot_read_and_writes_nothing(
    api, method, path, good, body, content_type, status, words
):
    client, service = api
    before = _position(service)
    answer = client.request(
        method, path, content=good if body is None else body, headers={"Content-Type": content_type}
    )
    assert answer.status_code == status, answer.text
    assert words in answer.json()["error"]
    assert _position(service) == before


@pytest.mark.parametrize(("method", "path", "good"), ROUTES, ids=[r[1] for r in ROUTES])
@pytest.mark.parametrize("content_type", [None, "application/json; charset=utf-8"])
def test_a_json_body_with_no_type_or_a_json_type_is_read(api, method, path, good, content_type):
    client, _ = api
    headers = {} if content_type is None else {"Content-Type": content_type}
    answer = client.request(method, path, content=good, headers=headers)
    # Read and acted on: 200, or 409 where the group's state refuses the report.
    assert answer.status_code in (200, 409), answer.text


def test_a_heartbeat_takes_no_body(api):
    client, service = api
    before = _position(service)
    sent = client.post(f"/v1/nodes/{NODE}/heartbeat", json={"attempt": 1, "status": "READY"})
    assert sent.status_code == 400 and sent.json()["error"] == "this call takes no body"
    assert _position(service) == before
    assert client.post(f"/v1/nodes/{NODE}/heartbeat").status_code == 200
