"""The list operations' queries against a real server: ``limit``/``continue`` pagination
(and the client that walks every page), and ``?label=key=value`` selection."""

from __future__ import annotations

import time
from urllib.parse import parse_qsl

import httpx
import pytest

from costart.cli.backend import RemoteBackend
from costart.domain.errors import DomainError
from costart.rest.client import Client
from costart.rest.paging import decode_offset, encode_token
from tests.rest.test_server import (
    ALICE,
    client,
    server,  # noqa: F401  (the module-scoped fixture)
    spec,
    wait_for_state,
)

NAMES = ("page-a", "page-b", "page-c")


@pytest.fixture(scope="module")
def three_groups(server):  # noqa: F811
    url, _, _ = server
    alice = client(url, ALICE)
    for name in NAMES:
        assert alice.post("/v1/groups", json=spec(name)).status_code == 201
    # The simulated claim driver appends ClaimReady/BarrierReleased a moment later; a
    # group at RUNNING has no more events coming, so page walks compare stable lists.
    for name in NAMES:
        wait_for_state(alice, name, "RUNNING")
    return url


def test_a_token_names_its_list_and_where_the_next_page_starts():
    assert decode_offset("groups", encode_token("groups", 7)) == 7
    assert decode_offset("groups", None) == 0
    with pytest.raises(DomainError, match="not one for groups"):
        decode_offset("groups", encode_token("holds", 7))
    with pytest.raises(DomainError, match="not a continue token"):
        decode_offset("groups", "%%%")


def test_a_limited_list_links_to_the_next_page_until_the_last(three_groups):
    alice = client(three_groups, ALICE)
    first = alice.get("/v1/groups", params={"owner": "alice", "limit": 2})
    assert first.status_code == 200
    assert [g["name"] for g in first.json()] == ["page-a", "page-b"]
    following = first.links["next"]["url"]
    path, _, query = following.partition("?")
    assert path == "/v1/groups"
    assert sorted(k for k, _ in parse_qsl(query)) == ["continue", "limit", "owner"]
    assert ("owner", "alice") in parse_qsl(query) and ("limit", "2") in parse_qsl(query)
    last = alice.get(following)
    assert [g["name"] for g in last.json()] == ["page-c"]
    assert "link" not in last.headers
    whole = alice.get("/v1/groups")
    assert [g["name"] for g in whole.json()] == list(NAMES) and "link" not in whole.headers
    exact = alice.get("/v1/groups", params={"limit": 3})
    assert len(exact.json()) == 3 and "link" not in exact.headers


@pytest.mark.parametrize(
    "path",
    [
        "/v1/groups",
        "/v1/members",
        "/v1/holds",
        "/v1/groups/page-a/members",
        "/v1/groups/page-a/events",
    ],
)
def test_every_list_refuses_a_token_that_is_not_its_own(three_groups, path):
    alice = client(three_groups, ALICE)
    foreign = encode_token("somewhere-else", 1)
    for token in (foreign, "not!a!token"):
        refused = alice.get(path, params={"continue": token})
        assert refused.status_code == 400, (path, refused.text)
        assert "continue" in refused.json()["error"], (path, refused.text)
    assert alice.get(path, params={"limit": 0}).status_code == 400


def test_the_client_walks_every_page(three_groups):
    with Client(three_groups, ALICE) as api:
        names = [g["name"] for g in api.call_list("/v1/groups", dict, {"limit": "1"})]
        events = api.call_list("/v1/groups/page-a/events", dict, {"limit": "1"})
    assert names == list(NAMES)
    whole = client(three_groups, ALICE).get("/v1/groups/page-a/events").json()
    assert events == whole and len(whole) > 1


def test_the_openapi_document_declares_the_paging_parameters_and_link(server):  # noqa: F811
    url, _, _ = server
    doc = httpx.get(f"{url}/schema/openapi.json", timeout=10).json()
    for path in ("/v1/groups", "/v1/members", "/v1/holds", "/v1/groups/{name}/events"):
        operation = doc["paths"][path]["get"]
        names = {p["name"] for p in operation["parameters"]}
        assert {"limit", "continue"} <= names, path
        assert "Link" in operation["responses"]["200"]["headers"], path


def test_groups_are_selected_by_every_label_asked_for(server):  # noqa: F811
    url, _, _ = server
    alice = client(url, ALICE)
    labelled = spec("labelled") | {"labels": {"team": "rl", "env": "prod"}}
    created = alice.post("/v1/groups", json=labelled)
    assert created.status_code == 201 and created.json()["labels"] == {"env": "prod", "team": "rl"}
    picked = alice.get("/v1/groups", params=[("label", "team=rl"), ("label", "env=prod")])
    assert [g["name"] for g in picked.json()] == ["labelled"]
    assert alice.get("/v1/groups", params={"label": "team=sl"}).json() == []
    refused = alice.get("/v1/groups", params={"label": "team"})
    assert refused.status_code == 400
    assert refused.json()["error"].startswith("bad label selector 'team': expected key=value")
    remote = RemoteBackend(url, ALICE)
    try:
        assert [g.name for g in remote.groups(None, None, (("team", "rl"),))] == ["labelled"]
    finally:
        remote.close()


def test_users_get_the_client_from_costart_client(three_groups):
    from costart.client import ApiError as PublicApiError
    from costart.client import Client as PublicClient
    from costart.projections import GroupView

    assert PublicClient is Client
    with PublicClient(three_groups, ALICE) as api:
        groups = api.call_list("/v1/groups", GroupView, [("owner", "alice"), ("limit", "2")])
        assert [g.name for g in groups][:3] == list(NAMES)
        with pytest.raises(PublicApiError) as raised:
            api.call("GET", "/v1/groups/no-such-group", dict)
    assert raised.value.status == 404


def walk(alice: httpx.Client, path: str) -> list[dict]:
    """Every page of ``path``, two rows at a time."""
    walked, following = [], f"{path}?limit=2"
    while following:
        answer = alice.get(following)
        assert answer.status_code == 200 and len(answer.json()) <= 2
        walked += answer.json()
        following = answer.links.get("next", {}).get("url", "")
    return walked


@pytest.mark.parametrize("path", ["/v1/groups", "/v1/members"])
def test_a_list_walked_page_by_page_is_the_whole_list(three_groups, path):
    alice = client(three_groups, ALICE)
    # The simulated agents report tasks started after their group runs: compare a walk
    # with the whole list only while the list stands still (the same before and after).
    deadline = time.monotonic() + 60
    while True:
        before = alice.get(path).json()
        walked = walk(alice, path)
        if alice.get(path).json() == before or time.monotonic() > deadline:
            break
    assert len(before) >= 3 and walked == before
    past = alice.get(path, params={"continue": encode_token(path.rsplit("/", 1)[1], 10**6)})
    assert past.status_code == 200 and past.json() == [] and "link" not in past.headers
