"""The submit's fast path (`costart.rest.submit_path`) answers as the framework's handler
does: the same requests, once with a ``Content-Length`` (the fast path serves them) and
once chunked (it hands them to the handler), get the same answers byte for byte, and
the fast path really served the first kind."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from litestar.testing import TestClient

import costart.rest.submit_path as submit_path
from costart.projections import Views
from costart.rest.auth import Tokens, User
from costart.rest.http_app import create_app
from costart.rest.watch import WatchHub
from costart.service.controller_service import Service
from tests.builders import ManualClock, new_controller
from tests.rest.fake_placement import PlaceEverything

ADMIN, ALICE, BOB = "admin-token-0123456789", "alice-token-0123456789", "bob-token-0123456789"
TOKENS = Tokens(
    {
        ADMIN: User(name="root", role="admin"),
        ALICE: User(name="alice", role="owner"),
        BOB: User(name="bob", role="owner"),
    }
)


def spec(name: str, owner: str = "alice", **member: object) -> dict[str, object]:
    m = {"name": "trainer", "kind": "job", "tasks": 2, "shape": {"gpu": 4}}
    m.update(member)
    return {"name": name, "owner": owner, "members": [m]}


@pytest.fixture
def api(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[TestClient, list[int], list[int]]]:
    """A client of the app, a list that grows by one per answer the fast path sent, and
    one that grows by one per submit run (on either path)."""
    controller = new_controller(ManualClock())
    controller.placement = PlaceEverything()
    hub = WatchHub.following(controller.read_events, controller.world)
    service = Service(controller, Views(tmp_path / "views"), watch=hub)
    served: list[int] = []
    runs: list[int] = []
    encode = submit_path.encode_json
    submit_batched = service.submit_batched

    def counted(value: object) -> bytes:
        served.append(1)
        return encode(value)

    async def counted_submit(*args: Any) -> Any:
        runs.append(1)
        return await submit_batched(*args)

    monkeypatch.setattr(submit_path, "encode_json", counted)
    monkeypatch.setattr(service, "submit_batched", counted_submit)
    try:
        with TestClient(app=create_app(service, TOKENS, hub)) as client:
            yield client, served, runs
    finally:
        service.close()


def _post(
    client: TestClient, body: bytes, headers: dict[str, str], chunked: bool
) -> httpx.Response:
    content: bytes | Iterator[bytes] = iter([body]) if chunked else body
    return client.post("/v1/groups", content=content, headers=headers)


def _json(token: str | None, ctype: str = "application/json") -> dict[str, str]:
    headers = {"Content-Type": ctype}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    return headers


# (what, body, headers, the status both paths answer)
CASES = [
    ("a bad field", json.dumps(spec("x", tasks=-1)).encode(), _json(ALICE), 422),
    ("an unknown field", json.dumps({**spec("x"), "colour": 1}).encode(), _json(ALICE), 422),
    ("not JSON", b"{not json", _json(ALICE), 422),
    ("bad TOML", b"name = ", _json(ALICE, "application/toml"), 422),
    ("another owner's group", json.dumps(spec("x", owner="bob")).encode(), _json(ALICE), 403),
    ("a name in use", json.dumps(spec("taken")).encode(), _json(ALICE), 409),
    ("a TOML body as text/plain", b'name = "x"\n', _json(ALICE, "text/plain"), 415),
    ("nested too deeply", b"[" * 1000 + b"]" * 1000, _json(ALICE), 422),
    ("a number out of range", b'{"name": "x", "priority": 1e400}', _json(ALICE), 422),
    ("no token", json.dumps(spec("x")).encode(), _json(None), 401),
    ("an unknown token", json.dumps(spec("x")).encode(), _json("y" * 24), 401),
]


@pytest.mark.parametrize(("what", "body", "headers", "status"), CASES, ids=[c[0] for c in CASES])
def test_a_refused_submit_gets_the_frameworks_answer_on_either_path(
    api, what, body, headers, status
):
    client, _, runs = api
    assert client.post("/v1/groups", json=spec("taken"), headers=_json(ALICE)).status_code == 201
    before = len(runs)
    fast = _post(client, body, headers, chunked=False)
    # A submit the fast path ran and that failed is not run again by the handler (one
    # without a known token, or of a type no spec is, is not run at all).
    assert len(runs) - before == (0 if status in (401, 415) else 1)
    framework = _post(client, body, headers, chunked=True)
    assert fast.status_code == framework.status_code == status, (fast.text, framework.text)
    assert fast.content == framework.content
    assert fast.headers == framework.headers
    assert fast.json()["error"]


@pytest.mark.parametrize(
    ("ctype", "encode"),
    [
        ("application/json", lambda s: json.dumps(s).encode()),
        (
            "application/toml",
            lambda s: (
                f'name = "{s["name"]}"\nowner = "alice"\n'
                '[[members]]\nname = "trainer"\nkind = "job"\ntasks = 2\nshape = { gpu = 4 }\n'.encode()
            ),
        ),
    ],
)
def test_a_submit_served_by_the_fast_path_answers_as_the_handler_does(api, ctype, encode):
    client, served, _ = api
    fast = _post(client, encode(spec("one")), _json(ADMIN, ctype), chunked=False)
    assert served == [1], "the fast path did not serve the submit"
    framework = _post(client, encode(spec("two")), _json(ADMIN, ctype), chunked=True)
    assert served == [1], "the fast path served a chunked submit"
    assert fast.status_code == framework.status_code == 201, (fast.text, framework.text)
    # The same group but for its name and id (the clock is the test's: the same times).
    assert fast.headers["location"] == "/v1/groups/one"
    assert framework.headers["location"] == "/v1/groups/two"
    assert {k: v for k, v in fast.headers.items() if k != "location"} == {
        k: v for k, v in framework.headers.items() if k != "location"
    }
    one, two = fast.json(), framework.json()
    assert (one["name"], two["name"]) == ("one", "two")
    own = ("name", "id", "submission_seq")  # the group's own; all else is equal
    assert list(one) == list(two)  # the same fields, in the same order
    assert {k: v for k, v in one.items() if k not in own} == {
        k: v for k, v in two.items() if k not in own
    }
    assert b'","owner":"alice",' in fast.content  # encoded as the framework encodes
    assert fast.content.count(b" ") == framework.content.count(b" ")


def test_a_body_over_the_limit_is_left_to_the_framework(api):
    client, served, _ = api
    huge = b'{"name": "' + b"x" * 300_000 + b'"}'
    answer = _post(client, huge, _json(ADMIN), chunked=False)
    assert answer.status_code == 413
    assert served == []


@pytest.mark.parametrize("chunked", [False, True], ids=["fast-path", "handler"])
def test_a_secret_shaped_env_value_is_accepted_with_a_warning_header(api, chunked):
    client, _, _ = api
    run = {"argv": ["x"], "env": {"HF_TOKEN": "hf_x", "MODE": "fast"}}
    body = json.dumps(spec(f"warned-{int(chunked)}", run=run)).encode()
    answer = _post(client, body, _json(ALICE), chunked=chunked)
    assert answer.status_code == 201, answer.text
    warnings = answer.headers.get_list("warning")
    assert warnings == [
        '299 - "members[0].run.env.HF_TOKEN: looks like a secret; plain env values are '
        "stored in the log for ever: name it in env_secrets instead (its value then stays "
        'on the node)"'
    ]
    quiet = _post(
        client, json.dumps(spec(f"quiet-{int(chunked)}")).encode(), _json(ALICE), chunked=chunked
    )
    assert "warning" not in quiet.headers


@pytest.mark.parametrize("chunked", [False, True], ids=["fast-path", "handler"])
def test_a_restart_rule_without_a_budget_is_accepted_with_its_default_named(api, chunked):
    """ADR 0071: the budget left out is recorded resolved, and the answer says which."""
    client, _, _ = api
    body = spec(f"budget-{int(chunked)}")
    body["failure"] = {"rules": [{"action": "restart-member"}]}
    answer = _post(client, json.dumps(body).encode(), _json(ALICE), chunked=chunked)
    assert answer.status_code == 201, answer.text
    assert answer.headers.get_list("warning") == [
        '299 - "failure.rules[0].max_restarts: not set: restart-member restarts each member '
        "it covers 3 times (the default), then fails the group; set max_restarts to say how "
        'many (0: none)"'
    ]
