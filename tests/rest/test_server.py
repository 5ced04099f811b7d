"""`costart serve` as a real process on 127.0.0.1: auth, errors, the start, metrics, logs.

One server for the module (a random free port, a temporary store); every wait is a
bounded poll.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time

import httpx
import pytest

from tests.rest.serving import DEADLINE_S, POLL_S, serving

ALICE = "alice-token-0123456789"
BOB = "bob-token-0123456789ab"
ROOT_TOKEN = "root-token-0123456789"


def spec(name: str, owner: str = "alice", **member: object) -> dict[str, object]:
    m = {"name": "trainer", "kind": "job", "tasks": 2, "shape": {"gpu": 4}, "claims": ["gpus"]}
    m.update(member)
    return {"name": name, "owner": owner, "members": [m]}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("serve")
    tokens = (
        f'[tokens.{ALICE}]\nuser = "alice"\n[tokens.{BOB}]\nuser = "bob"\n'
        f'[tokens.{ROOT_TOKEN}]\nuser = "root"\nrole = "admin"\n'
    )
    options = ("--interval", "0.1", "--simulate-claims", "--claim-delay", "0.3")
    placement = ("--placement", "tests.rest.fake_placement:factory")
    with serving(tmp, tokens, *options, *placement) as running:
        yield running


def client(url: str, token: str | None) -> httpx.Client:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.Client(base_url=url, headers=headers, timeout=10)


def wait_for_state(c: httpx.Client, name: str, state: str) -> dict:
    deadline = time.monotonic() + DEADLINE_S
    while time.monotonic() < deadline:
        detail = c.get(f"/v1/groups/{name}").json()
        if detail["group"]["state"] == state:
            return detail
        time.sleep(POLL_S)
    raise AssertionError(f"{name} never reached {state}: {detail['group']}")


def test_requests_without_a_known_token_are_unauthorized(server):
    url, _, _ = server
    assert client(url, None).get("/v1/groups").status_code == 401
    response = client(url, "not-a-token").get("/v1/groups")
    assert response.status_code == 401 and "token" in response.json()["error"]


def test_a_submitted_group_is_placed_its_claims_turn_ready_and_it_starts(server):
    url, _, _ = server
    alice = client(url, ALICE)
    response = alice.post("/v1/groups", json=spec("start-me"))
    assert response.status_code == 201, response.text
    assert response.json()["state"] in ("PENDING", "PLACED")
    detail = wait_for_state(alice, "start-me", "RUNNING")
    assert [m["state"] for m in detail["members"]] in (["READY"], ["RUNNING"])
    events = [e["event"] for e in alice.get("/v1/groups/start-me/events").json()]
    assert events.index("ClaimReady") < events.index("BarrierReleased")
    members = alice.get("/v1/groups/start-me/members").json()
    assert members[0]["nodes"] == ["start-me-trainer-n0", "start-me-trainer-n1"]


def test_owners_act_on_their_own_groups_admins_on_all_others_are_forbidden(server):
    url, _, _ = server
    alice, bob, admin = client(url, ALICE), client(url, BOB), client(url, ROOT_TOKEN)
    assert alice.post("/v1/groups", json=spec("bobs", owner="bob")).status_code == 403
    assert admin.post("/v1/groups", json=spec("bobs", owner="bob")).status_code == 201
    assert alice.post("/v1/groups", json=spec("alices")).status_code == 201
    denied = bob.post("/v1/groups/alices/cancel")
    assert denied.status_code == 403 and "bob" in denied.json()["error"]
    assert bob.get("/v1/groups/alices").status_code == 200  # reading is open
    assert admin.post("/v1/groups/bobs/cancel").json()["state"] == "CANCELLED"
    assert alice.post("/v1/groups/alices/cancel").status_code == 200
    # A repeated cancel (a retry whose answer was lost) is told the group is cancelled.
    again = alice.post("/v1/groups/alices/cancel")
    assert again.status_code == 200 and again.json()["state"] == "CANCELLED"
    assert alice.post("/v1/groups/nobody/cancel").status_code == 404


def test_bad_bodies_get_a_4xx_naming_the_field_never_a_500(server):
    url, _, _ = server
    alice = client(url, ALICE)
    bad = alice.post("/v1/groups", json=spec("bad", tasks=-1))
    assert bad.status_code == 422
    assert bad.json()["field"] == "members[0].tasks"
    unknown = alice.post("/v1/groups", json={**spec("bad"), "colour": "red"})
    assert unknown.status_code == 422 and "colour" in unknown.json()["error"]
    garbage = alice.post(
        "/v1/groups", content=b"{not json", headers={"Content-Type": "application/json"}
    )
    assert garbage.status_code == 422
    toml = alice.post(
        "/v1/groups",
        content=b'name = "t"\nowner = "alice"\n',
        headers={"Content-Type": "application/toml"},
    )
    assert toml.status_code == 422 and "members" in toml.json()["error"]
    huge = alice.post("/v1/groups", content=b" " * 300_000)
    assert huge.status_code == 413
    wrong_state = alice.get("/v1/groups", params={"state": "SLEEPING"})
    assert wrong_state.status_code == 400 and "state" in wrong_state.json()["error"]
    assert alice.get("/v1/groups/no-such-group").status_code == 404


def test_why_returns_the_pend_reason_and_its_history(server):
    url, _, _ = server
    alice = client(url, ALICE)
    assert alice.post("/v1/groups", json=spec("why-me")).status_code == 201
    why = alice.get("/v1/groups/why-me/why").json()
    assert why["group"] == "why-me" and "history" in why and "pend_reason" in why


def test_metrics_count_groups_by_state_and_time_to_start_from_events(server):
    url, _, _ = server
    alice = client(url, ALICE)
    alice.post("/v1/groups", json=spec("metered"))
    wait_for_state(alice, "metered", "RUNNING")
    text = httpx.get(f"{url}/metrics", timeout=10).text
    running = [
        line for line in text.splitlines() if line.startswith('costart_groups{state="RUNNING"}')
    ]
    assert running and float(running[0].split()[-1]) >= 1
    count = [
        line for line in text.splitlines() if line.startswith("costart_time_to_start_seconds_count")
    ]
    assert count and float(count[0].split()[-1]) >= 1
    assert (
        "costart_accelerators_idle_held" in text and "costart_barrier_wait_seconds_bucket" in text
    )


def test_the_openapi_document_lists_every_route(server):
    url, _, _ = server
    doc = httpx.get(f"{url}/schema/openapi.json", timeout=10).json()
    for path in (
        "/v1/groups",
        "/v1/groups/{name}",
        "/v1/groups/{name}/why",
        "/v1/groups/{name}/cancel",
        "/v1/groups/{name}/events",
        "/metrics",
    ):
        assert path in doc["paths"]


def test_the_cli_talks_to_the_server_with_exit_codes_a_script_can_rely_on(server):
    url, _, env = server

    def costart(*args: str, token: str = ALICE) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "costart.cli.main", "--server", url, "--token", token, *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )

    listed = costart("get", "groups", "-o", "json")
    assert listed.returncode == 0, listed.stderr
    assert "start-me" in [g["name"] for g in json.loads(listed.stdout)]
    assert costart("describe", "group", "no-such").returncode == 4
    denied = costart("get", "groups", token="wrong-token")
    assert denied.returncode == 6 and denied.stderr.startswith("error:")


def test_every_request_is_logged_as_a_json_line(server):
    url, log_path, _ = server
    httpx.get(f"{url}/healthz", timeout=10)

    def whole_lines() -> list[dict[str, object]]:
        # The server may be writing a line as the test reads: only whole lines count.
        text = log_path.read_text()
        complete = text[: text.rfind("\n") + 1]
        return [json.loads(line) for line in complete.splitlines() if line.startswith("{")]

    deadline = time.monotonic() + DEADLINE_S
    requests: list[dict[str, object]] = []
    while not requests and time.monotonic() < deadline:
        requests = [line for line in whole_lines() if line.get("event") == "request"]
        time.sleep(POLL_S)
    assert requests and {"method", "path", "status", "duration_ms"} <= set(requests[-1])
