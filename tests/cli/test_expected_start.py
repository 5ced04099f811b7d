"""Expected starts end to end (issue 36, ADRs 0136-0137): a real `costart serve` on
127.0.0.1 over a two-node cluster (one server for the module), its REST group rows and
``GET /v1/expected-starts``, the CLI's ``get -o wide``, ``describe`` and ``-o json``
over ``--server``, and the store read directly (no estimator: ``n/a``). Every wait is a
bounded poll."""

from __future__ import annotations

import itertools
import json
import re
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from tests.cli.conftest import ADMIN, TOKENS, cli_env, run_cli
from tests.cli.table_cells import column_starts, read_rows
from tests.rest.serving import DEADLINE_S, POLL_S, serve_env, serving
from tests.service.two_nodes import CLUSTER, gang_doc

HOUR_NS = 3600 * 10**9


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, httpx.Client]]:
    """The server's URL and an admin client; "holder" runs on both nodes for its
    declared hour, "waiter" waits for them. Estimates plan one waiting group (the depth
    ``--estimate-depth`` gives): a later group is beyond it."""
    tmp = tmp_path_factory.mktemp("estimates")
    env = {**serve_env(tmp, lmdb=True), "COSTART_CLUSTER": str(CLUSTER)}
    options = (
        "--interval", "0.05", "--simulate-claims", "--claim-delay", "0", "--estimate-depth", "1",
    )  # fmt: skip
    with serving(tmp, TOKENS, *options, env=env) as (url, _, _):
        with httpx.Client(
            base_url=url, headers={"Authorization": f"Bearer {ADMIN}"}, timeout=10
        ) as api:
            assert api.post("/v1/groups", json=gang_doc("holder", 2, "1h")).status_code == 201
            _until(api, "/v1/groups/holder", lambda d: d["group"]["state"] == "RUNNING")
            assert api.post("/v1/groups", json=gang_doc("waiter", 2)).status_code == 201
            yield url, api


def _until(api: httpx.Client, path: str, ok: Callable[[Any], bool]) -> Any:
    deadline = time.monotonic() + DEADLINE_S
    while True:
        body = api.get(path).json()
        if ok(body):
            return body
        if time.monotonic() > deadline:
            raise AssertionError(f"{path} never as wanted; last: {body}")
        time.sleep(POLL_S)


def _planned(detail: dict[str, Any]) -> bool:
    return detail["group"]["expected_start"] is not None


def test_a_waiting_group_row_carries_its_expected_start_from_the_declared_limit(served):
    _, api = served
    detail = _until(api, "/v1/groups/waiter", _planned)
    estimate = detail["group"]["expected_start"]
    holder = api.get("/v1/groups/holder/members").json()[0]
    # The holder's tasks run for their declared hour: the waiter starts when they end.
    assert estimate["basis"] == "limit" and estimate["unplanned"] == ""
    assert estimate["start_ns"] == holder["started_at_ns"] + HOUR_NS
    assert estimate["start"].startswith(detail["group"]["submitted_at"][:4])
    assert estimate["earliest_ns"] <= estimate["start_ns"] <= estimate["latest_ns"]
    assert estimate["assumption"] == (
        "rests on the declared limits of the running work it waits for"
    )
    assert not estimate["stale"] and estimate["stale_reason"] is None
    assert estimate["position"] >= 1 and estimate["planned_at"].endswith("Z")
    # The whole plan: one answer with its position, time, bounds and freshness.
    plan = api.get("/v1/expected-starts").json()
    assert (
        plan["available"] and plan["depth"] == 1 and plan["window_ns"] == 24 * HOUR_NS
    )  # --estimate-depth
    assert [g["group"] for g in plan["groups"]] == ["waiter"]
    assert plan["position"] <= plan["log_position"] and plan["took_s"] >= 0
    # In the list too; a running group has none.
    rows = {g["name"]: g for g in api.get("/v1/groups").json()}
    assert rows["waiter"]["expected_start"]["start_ns"] == estimate["start_ns"]
    assert rows["holder"]["expected_start"] is None


def test_the_estimate_refreshes_as_the_state_changes(served):
    _, api = served
    _until(api, "/v1/groups/waiter", _planned)
    assert api.post("/v1/groups", json=gang_doc("later", 1)).status_code == 201
    later = _until(api, "/v1/groups/later", _planned)["group"]["expected_start"]
    waiter = api.get("/v1/groups/waiter").json()["group"]["expected_start"]
    # "later" comes behind "waiter" (the queue's order), beyond the one group planned.
    assert (later["start_ns"], later["unplanned"], later["depth"]) == (None, "depth", 1)
    assert later["assumption"] == "beyond the 1 groups planned: no start is estimated"
    assert later["position"] > waiter["position"] - 1


def _table(stdout: str) -> dict[str, dict[str, str]]:
    header, *lines = stdout.splitlines()
    starts = [*column_starts(header), len(header)]
    columns = [header[a:b].strip() for a, b in itertools.pairwise(starts)]
    assert columns[0] == "NAME"
    return {row[0]: dict(zip(columns, row, strict=True)) for row in read_rows(header, lines)}


def test_the_cli_shows_it_in_get_wide_describe_and_json(served):
    url, api = served
    _until(api, "/v1/groups/waiter", _planned)
    remote = ("--server", url, "--token", ADMIN)
    wide = run_cli("get", "groups", "-o", "wide", *remote)
    assert wide.returncode == 0, wide.stderr
    table = _table(wide.stdout)
    assert table["holder"]["EXPECTED START"] == "-"
    cell = table["waiter"]["EXPECTED START"]
    assert re.fullmatch(r"in (59m\d\ds|1h00m) \(limit\)", cell), cell  # the hour left
    described = run_cli("describe", "group", "waiter", *remote)
    assert described.returncode == 0, described.stderr
    line = next(x for x in described.stdout.splitlines() if x.startswith("Expected:"))
    # The interval is said once it has a spread (a point interval is the point).
    assert line.startswith("Expected:   20") and "(in 59m" in line
    assert line.endswith("rests on the declared limits of the running work it waits for")
    assert "planned at log position" in described.stdout
    rows = json.loads(run_cli("get", "groups", "-o", "json", *remote).stdout)
    by_name = {g["name"]: g for g in rows}
    assert by_name["waiter"]["expected_start"]["basis"] == "limit"
    assert by_name["holder"]["expected_start"] is None
    detail = json.loads(run_cli("describe", "group", "waiter", "-o", "json", *remote).stdout)
    assert detail["group"]["expected_start"]["assumption"].startswith("rests on the declared")


def test_a_store_read_directly_has_no_estimator_and_says_so(tmp_path):
    env = cli_env(PERSISTENCE_MODULE="eventsourcing.sqlite", SQLITE_DBNAME=str(tmp_path / "e.db"))
    spec = tmp_path / "g.json"
    spec.write_text(json.dumps(gang_doc("alone", 1)))
    store = ("--store", str(tmp_path / "store"))
    assert run_cli(*store, "submit", "--create", str(spec), env=env).returncode == 0
    wide = run_cli(*store, "get", "groups", "-o", "wide", env=env)
    assert wide.returncode == 0, wide.stderr
    assert _table(wide.stdout)["alone"]["EXPECTED START"] == "n/a (no serve)"
    described = run_cli(*store, "describe", "group", "alone", env=env).stdout
    assert "Expected:   n/a: only `costart serve` estimates starts" in described


def test_the_openapi_document_describes_the_field_and_the_plan(served):
    url, _ = served
    doc = httpx.get(f"{url}/schema/openapi.json", timeout=10).json()
    assert "get" in doc["paths"]["/v1/expected-starts"]
    schemas = doc["components"]["schemas"]
    field = schemas["TimedGroup"]["properties"]["expected_start"]
    assert "never logged" in field["description"]
    plan = schemas["ExpectedStarts"]["properties"]
    assert {"position", "planned_at_ns", "stale", "stale_reason", "groups"} <= set(plan)
    assert {"basis", "assumption", "earliest_ns", "latest_ns"} <= set(
        schemas["ExpectedStart"]["properties"]
    )
    # Like every read, the plan needs a token.
    assert httpx.get(f"{url}/v1/expected-starts", timeout=10).status_code == 401
