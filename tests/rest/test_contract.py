"""The REST contract: an authorization matrix over every mutating endpoint (schemathesis
drives every operation of the OpenAPI document in `tests/rest/test_schemathesis.py`)."""

from __future__ import annotations

import itertools

import pytest

from tests.rest.test_server import ALICE, BOB, ROOT_TOKEN, client, spec

USERS = {
    "owner": ALICE,
    "other": BOB,
    "admin": ROOT_TOKEN,
    "anonymous": None,
    "bad-token": "x" * 24,
}
# expected status of each mutating endpoint, for each caller, on a group owned by alice
EXPECTED = {
    "submit": {"owner": 201, "other": 403, "admin": 201, "anonymous": 401, "bad-token": 401},
    "cancel": {"owner": 200, "other": 403, "admin": 200, "anonymous": 401, "bad-token": 401},
    "delete": {"owner": 200, "other": 403, "admin": 200, "anonymous": 401, "bad-token": 401},
}
_names = (f"authz-{i}" for i in itertools.count())


@pytest.mark.parametrize(("endpoint", "who"), [(e, w) for e in EXPECTED for w in USERS])
def test_authorization_matrix(server, endpoint, who):
    url, _, _ = server
    caller = client(url, USERS[who])
    owner = client(url, ALICE)
    name = next(_names)
    if endpoint == "submit":
        response = caller.post("/v1/groups", json=spec(name, owner="alice"))
    else:
        assert owner.post("/v1/groups", json=spec(name, owner="alice")).status_code == 201
        if endpoint == "cancel":
            response = caller.post(f"/v1/groups/{name}/cancel")
        else:
            response = caller.delete(f"/v1/groups/{name}")
    assert response.status_code == EXPECTED[endpoint][who], response.text
    if response.status_code >= 400:
        assert response.json()["error"]
    if endpoint in ("cancel", "delete") and response.status_code == 403:
        assert owner.get(f"/v1/groups/{name}").json()["group"]["state"] != "CANCELLED"
