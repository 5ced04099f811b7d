"""The REST contract: an authorization matrix over every mutating endpoint, and
schemathesis driving every operation of the OpenAPI document against the real server —
no server error, and every response matches the schema."""

from __future__ import annotations

import itertools

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.specs.openapi.checks import positive_data_acceptance

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
        response = caller.post(f"/v1/groups/{name}/cancel")
    assert response.status_code == EXPECTED[endpoint][who], response.text
    if response.status_code >= 400:
        assert response.json()["error"]
    if endpoint == "cancel" and response.status_code == 403:
        assert owner.get(f"/v1/groups/{name}").json()["group"]["state"] != "CANCELLED"


def test_every_operation_conforms_to_the_openapi_document(server):
    """schemathesis generates requests for every operation (as an admin, so bodies reach
    validation); no response is a server error and every one matches the document."""
    url, _, _ = server
    schema = schemathesis.openapi.from_url(f"{url}/schema/openapi.json")
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 8
    seen: dict[str, set[int]] = {}
    for operation in operations:

        @given(case=operation.as_strategy())
        @settings(
            max_examples=15,
            deadline=None,
            suppress_health_check=list(HealthCheck),
            derandomize=True,
        )
        def check(case: schemathesis.Case) -> None:
            auth = {"Authorization": f"Bearer {ROOT_TOKEN}"}
            if case.path == "/v1/watch":
                # An endless stream: its status and type are checked, not its (unending) body.
                status, media = _open_watch(url, case, auth)
                assert status < 500 and (status >= 400 or media == "text/event-stream")
                seen.setdefault(f"{case.method} {case.path}", set()).add(status)
                return
            response = case.call(base_url=url, headers=auth, timeout=10)
            assert response.status_code < 500, (
                f"{case.method} {case.formatted_path}: {response.text}"
            )
            seen.setdefault(f"{case.method} {case.path}", set()).add(response.status_code)
            # Schema-valid specs may still break rules JSON Schema cannot say (min_start
            # <= replicas, duration syntax, name patterns): a 422 naming the field is right.
            case.validate_response(response, excluded_checks=[positive_data_acceptance])

        check()
    print(sorted((k, sorted(v)) for k, v in seen.items()))
    assert len(seen) == len(operations)  # every operation was exercised
    assert 422 in seen["POST /v1/groups"]  # invalid specs were generated and refused by field


def _open_watch(url: str, case: schemathesis.Case, auth: dict[str, str]) -> tuple[int, str]:
    """Open the generated watch request, read its status and content type, close it."""
    # The generated headers may carry a (security-scheme) Authorization of their own: ours wins.
    headers = {**{k: str(v) for k, v in (case.headers or {}).items()}, **auth}
    params = case.query or {}
    with httpx.stream(
        "GET", f"{url}/v1/watch", params=params, headers=headers, timeout=10
    ) as response:
        return response.status_code, response.headers.get("content-type", "").split(";")[0]
