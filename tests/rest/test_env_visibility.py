"""Who reads a run table's env values, against a real `costart serve` (one per module) on
the demo cluster with the real placement (docs/design.md §11, ADR 0064).

Two groups are placed: alice's trainer on H100 nodes and bob's rollout on L40S nodes,
each with a secret in its ``env``. Every caller asks every read route and the watch
stream; the secret's bytes must appear in a raw answer exactly when the caller may see
them: the group's owner, an admin, or an agent with a task of the group on one of its
nodes (not on the watch stream, which only wakes agents up). Everybody else gets the
names, each value ``(hidden)`` and ``env_withheld``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import httpx
import pytest

from tests.rest.dispatch_support import (
    ADMIN,
    CLAIMS,
    OTHER,
    OWNER,
    SERVE_AGENT,
    TRAIN_AGENT,
    client,
    group_state,
    position,
    tokens_toml,
    wait_until,
)
from tests.rest.serving import serve_env, serving

ALICE_SECRET = "alice-s3cret-7f31c2a9"
BOB_SECRET = "bob-s3cret-0d84be51"
CALLERS = {
    "alice": OWNER,
    "bob": OTHER,
    "admin": ADMIN,
    "claims": CLAIMS,
    "h100-agent": TRAIN_AGENT,  # alice's trainer is placed on its nodes
    "l40s-agent": SERVE_AGENT,  # bob's rollout is placed on its nodes
}
# Whose values each caller reads from the member routes: (alice's, bob's).
SEES = {
    "alice": (True, False),
    "bob": (False, True),
    "admin": (True, True),
    "claims": (False, False),
    "h100-agent": (True, False),
    "l40s-agent": (False, True),
}
# On the watch stream, only owners and admins.
WATCH_SEES = {**SEES, "h100-agent": (False, False), "l40s-agent": (False, False)}
WATCH_QUIET_S = 3.0


def env_spec(name: str, owner: str, member: str, gpu_type: str, secret: str) -> dict[str, Any]:
    return {
        "name": name,
        "owner": owner,
        "members": [
            {
                "name": member,
                "kind": "job",
                "tasks": 1,
                "shape": {"gpu": 1, "gpu_type": gpu_type},
                "claims": ["gpus"],  # never reported: the group waits, placed, at its barrier
                "run": {"argv": ["python3", "work.py"], "env": {"API_KEY": secret, "MODE": "x"}},
            }
        ],
    }


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("env-visibility")
    env = serve_env(tmp, lmdb=True)
    with serving(tmp, tokens_toml(), "--interval", "0.1", env=env) as (url, _, served_env):
        specs = [
            env_spec("env-alice", "alice", "trainer", "H100", ALICE_SECRET),
            env_spec("env-bob", "bob", "rollout", "L40S", BOB_SECRET),
        ]
        for spec, token in zip(specs, (OWNER, OTHER), strict=True):
            answer = client(url, token).post("/v1/groups", json=spec)
            assert answer.status_code == 201, answer.text
            # The submit's own answer carries no run table at all.
            assert ALICE_SECRET not in answer.text and BOB_SECRET not in answer.text
        admin = client(url, ADMIN)
        for spec in specs:
            name = spec["name"]
            wait_until(lambda n=name: group_state(admin, n), lambda s: s == "PLACED", name)
        yield url, served_env


def run_table(c: httpx.Client, group: str) -> dict[str, Any]:
    answer = c.get(f"/v1/groups/{group}/members")
    assert answer.status_code == 200, answer.text
    return dict(answer.json()[0]["run"])


def read_routes(group: str) -> dict[str, bool]:
    """Every read route that names the group, or lists it: whether it carries run tables."""
    return {
        f"/v1/groups/{group}": True,
        f"/v1/groups/{group}/members": True,
        "/v1/members": True,
        f"/v1/groups/{group}/events": False,
        f"/v1/groups/{group}/why": False,
        "/v1/groups": False,
        "/v1/holds": False,
    }


def watch_text(c: httpx.Client, until: int) -> str:
    """The raw watch stream from the start up to log position ``until`` (a filtered
    stream may have nothing there: then until it stays quiet for a while)."""
    lines: list[str] = []
    quiet = httpx.Timeout(10, read=WATCH_QUIET_S)
    try:
        with c.stream("GET", "/v1/watch", params={"after": 0}, timeout=quiet) as response:
            assert response.status_code == 200
            for line in response.iter_lines():
                lines.append(line)
                if line.startswith("data:") and json.loads(line[5:])["position"] >= until:
                    break
    except httpx.ReadTimeout:
        pass
    return "\n".join(lines)


@pytest.mark.parametrize("who", sorted(CALLERS))
def test_env_values_are_in_an_answer_exactly_when_the_caller_may_see_them(server, who):
    url, _ = server
    c = client(url, CALLERS[who])
    for (group, secret), sees in zip(
        (("env-alice", ALICE_SECRET), ("env-bob", BOB_SECRET)), SEES[who], strict=True
    ):
        for path, carries_run in read_routes(group).items():
            answer = c.get(path, params={"limit": 1000})
            assert answer.status_code == 200, (path, answer.text)
            assert (secret in answer.text) == (carries_run and sees), (who, path, group)


@pytest.mark.parametrize("who", sorted(CALLERS))
def test_whoever_may_not_see_the_values_gets_the_names_each_hidden(server, who):
    url, _ = server
    c = client(url, CALLERS[who])
    for group, sees in zip(("env-alice", "env-bob"), SEES[who], strict=True):
        run = run_table(c, group)
        assert [name for name, _ in run["env"]] == ["API_KEY", "MODE"]
        assert run["argv"] == ["python3", "work.py"]  # the rest of the table is shown
        if sees:
            assert run["env"][1] == ["MODE", "x"] and "env_withheld" not in run
        else:
            assert run["env"] == [["API_KEY", "(hidden)"], ["MODE", "(hidden)"]]
            assert run["env_withheld"] is True
        detail = c.get(f"/v1/groups/{group}").json()
        assert detail["members"][0]["run"] == run


@pytest.mark.parametrize("who", sorted(CALLERS))
def test_the_watch_stream_shows_env_values_to_the_groups_owner_and_admins_only(server, who):
    url, _ = server
    text = watch_text(client(url, CALLERS[who]), position(url))
    for secret, sees in zip((ALICE_SECRET, BOB_SECRET), WATCH_SEES[who], strict=True):
        assert (secret in text) == sees, who
    if who in ("bob", "claims"):  # they watch every group: alice's creation, withheld
        frames = [json.loads(line[5:]) for line in text.splitlines() if line.startswith("data:")]
        (submitted,) = [f for f in frames if f["type"] == "GroupSubmitted"
                        and f["group"] == "env-alice"]  # fmt: skip
        run = submitted["event"]["spec"]["members"][0]["run"]
        assert run["env"] == [["API_KEY", "(hidden)"], ["MODE", "(hidden)"]]
        assert run["env_withheld"] is True


def describe(url: str, env: dict[str, str], token: str, *args: str) -> str:
    command = [sys.executable, "-m", "costart.cli.main", "--server", url, "--token", token]
    out = subprocess.run(
        [*command, "describe", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    return str(out.stdout)


def test_describe_over_the_server_says_a_withheld_value_is_hidden(server):
    url, env = server
    bob_view = describe(url, env, OTHER, "member", "env-alice/trainer")
    assert "Env:        API_KEY=(hidden)" in bob_view and "Env:        MODE=(hidden)" in bob_view
    assert "the group's owner and admins see them" in bob_view
    for args in (("group", "env-alice"), ("member", "env-alice/trainer", "-o", "json")):
        assert ALICE_SECRET not in describe(url, env, OTHER, *args)
    alice_view = describe(url, env, OWNER, "member", "env-alice/trainer")
    assert f"Env:        API_KEY={ALICE_SECRET}" in alice_view and "(hidden)" not in alice_view


def test_the_openapi_document_declares_the_withheld_flag_of_a_run_table(server):
    url, _ = server
    doc = httpx.get(f"{url}/schema/openapi.json", timeout=10).json()
    run = doc["components"]["schemas"]["RunSpec"]["properties"]
    assert (
        run["env_withheld"]["type"] == "boolean"
        and "(hidden)" in run["env_withheld"]["description"]
    )
