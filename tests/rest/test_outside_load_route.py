"""``PUT /v1/nodes/{node}/outside-load`` (ADR 0118) against a real `costart serve`: the
agent of a node reports what other work holds there, placement counts it out (a group
that needs it pends naming it), and every bad or unauthorized report is refused naming
the problem, with nothing written to the log."""

from __future__ import annotations

from pathlib import Path

import pytest

from costart.controller import Controller
from costart.domain.errors import Conflict
from costart.placement import ReportedLoad
from costart.placement.incremental import from_cluster_file
from costart.service.outside_load import outside_reports
from tests.rest.dispatch_support import (
    ADMIN,
    H100,
    OWNER,
    SERVE_AGENT,
    TRAIN_AGENT,
    client,
    group_state,
    position,
    tokens_toml,
    wait_until,
)
from tests.rest.fake_placement import PlaceEverything
from tests.rest.serving import serve_env, serving

DEMO_CLUSTER = Path(__file__).resolve().parents[2] / "scenarios" / "cluster-demo.toml"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("outside")
    with serving(tmp, tokens_toml(), "--interval", "0.1", env=serve_env(tmp)) as running:
        yield running[0]


@pytest.mark.parametrize(
    ("token", "node", "body", "status", "text"),
    [
        (SERVE_AGENT, "h100-0000", {"gpu": 1, "cpu": 1, "mem_gb": 1}, 403, "h100-0000"),
        (OWNER, "h100-0000", {"gpu": 1, "cpu": 1, "mem_gb": 1}, 403, "outside load"),
        (ADMIN, "h100-9999", {"gpu": 1, "cpu": 1, "mem_gb": 1}, 404, "h100-9999"),
        (TRAIN_AGENT, "h100-0000", {"gpu": -1, "cpu": 1, "mem_gb": 1}, 400, "gpu"),
        (TRAIN_AGENT, "h100-0000", {"gpu": 1, "cpu": 1}, 400, "mem_gb"),
        (TRAIN_AGENT, "h100-0000", {"gpu": 1, "cpu": 1, "mem_gb": 1, "x": 1}, 400, "x"),
        (
            TRAIN_AGENT,
            "h100-0000",
            {"gpu": 1, "cpu": 1, "mem_gb": 1, "source": "S!"},
            400,  # the schema's pattern refuses it as it reads the body
            "source",
        ),
        (
            TRAIN_AGENT,
            "h100-0000",
            {"gpu": 1, "cpu": 1, "mem_gb": 1, "source": "s\n"},
            422,
            "source",
        ),
    ],
)
def test_bad_or_unauthorized_reports_are_refused_naming_the_problem(
    server, token, node, body, status, text
):
    before = position(server)
    answer = client(server, token).put(f"/v1/nodes/{node}/outside-load", json=body)
    assert answer.status_code == status, answer.text
    assert text in answer.text
    assert position(server) == before


def test_reported_outside_load_holds_capacity_and_a_group_pends_naming_it(server):
    agent = client(server, TRAIN_AGENT)
    for node in H100:  # every H100 node: one GPU busy with other work
        answer = agent.put(
            f"/v1/nodes/{node}/outside-load",
            json={"gpu": 1, "cpu": 2, "mem_gb": 8, "source": "slurm"},
        )
        assert answer.status_code == 200, answer.text
        assert answer.json() == {"node": node, "gpu": 1, "cpu": 2, "mem_gb": 8}
    spec = {
        "name": "whole-h100",
        "owner": "alice",
        "members": [
            {"name": "w", "kind": "job", "tasks": 1, "shape": {"gpu": 8, "gpu_type": "H100"}}
        ],
    }
    owner = client(server, OWNER)
    assert owner.post("/v1/groups", json=spec).status_code == 201

    def reason() -> str:
        found = owner.get("/v1/groups/whole-h100").json()["group"].get("pend_reason") or {}
        return str(found.get("message", ""))

    wait_until(
        reason,
        lambda r: "outside work holds h100-0000 {gpu:1, cpu:2, mem_gb:8} (slurm)" in r,
        "reason",
    )
    assert "and 28 more nodes" in reason(), reason()
    answer = agent.put("/v1/nodes/h100-0007/outside-load", json={"gpu": 0, "cpu": 0, "mem_gb": 0})
    assert answer.status_code == 200, answer.text
    wait_until(
        lambda: group_state(owner, "whole-h100"), lambda s: s in ("PLACED", "RUNNING"), "placed"
    )
    tasks = agent.get("/v1/nodes/h100-0007/tasks").json()
    assert [t["group"] for t in tasks] == ["whole-h100"]


def test_a_placement_that_takes_no_outside_load_is_a_conflict_naming_why() -> None:
    with pytest.raises(Conflict, match="takes no reported outside load"):
        outside_reports(Controller(placement=PlaceEverything()))
    with pytest.raises(Conflict, match="takes no reported outside load"):
        outside_reports(Controller())  # no placement at all
    step = from_cluster_file(DEMO_CLUSTER)
    assert isinstance(outside_reports(Controller(placement=step)), ReportedLoad)
