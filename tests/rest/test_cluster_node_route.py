"""``GET /v1/nodes/{node}`` (ADR 0120) against a real `costart serve`: a node as the
server's cluster view has it, what `costart slurm` compares Slurm's report with; and a
status change carrying the host's reason (``PUT .../status`` with ``note``)."""

from __future__ import annotations

import pytest

from tests.rest.dispatch_support import (
    ADMIN,
    OWNER,
    SERVE_AGENT,
    TRAIN_AGENT,
    client,
    position,
    tokens_toml,
)
from tests.rest.serving import serve_env, serving


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("cluster-node")
    with serving(tmp, tokens_toml(), "--interval", "0.1", env=serve_env(tmp)) as running:
        yield running[0]


def test_a_node_reads_as_the_cluster_file_gives_it(server) -> None:
    answer = client(server, TRAIN_AGENT).get("/v1/nodes/h100-0003")
    assert answer.status_code == 200, answer.text
    assert answer.json() == {
        "node": "h100-0003", "gpu": 8, "cpu": 96, "mem_gb": 1024, "status": "up",
        "gpu_type": "H100",
    }  # fmt: skip


@pytest.mark.parametrize(
    ("token", "node", "status", "text"),
    [
        (SERVE_AGENT, "h100-0000", 403, "h100-0000"),
        (OWNER, "h100-0000", 403, "read"),
        (ADMIN, "h100-9999", 404, "h100-9999"),
    ],
)
def test_a_node_not_the_callers_or_not_in_the_cluster_is_refused(
    server, token, node, status, text
) -> None:
    answer = client(server, token).get(f"/v1/nodes/{node}")
    assert answer.status_code == status, answer.text
    assert text in answer.text


def test_a_drain_with_a_note_is_recorded_with_it_and_read_back(server) -> None:
    agent = client(server, TRAIN_AGENT)
    note = "slurm reports gpu=2 for h100-0005, the cluster file says 8"
    before = position(server)
    answer = agent.put("/v1/nodes/h100-0005/status", json={"status": "drained", "note": note})
    assert answer.status_code == 200, answer.text
    assert answer.json()["events"] == 1
    assert position(server) == before + 1
    assert agent.get("/v1/nodes/h100-0005").json()["status"] == "drained"
    too_long = agent.put("/v1/nodes/h100-0005/status", json={"status": "up", "note": "x" * 501})
    assert too_long.status_code == 400, too_long.text
    assert "note" in too_long.text
    assert position(server) == before + 1
