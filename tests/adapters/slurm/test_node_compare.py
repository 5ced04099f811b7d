"""One pass of the adapter's node reading (ADR 0120) over recorded Slurm output and a
stand-in for `serve` that answers its view of each node: a node Slurm offers less on is
drained naming why, once; it is up again once the two agree; a server that forgot the
drain is told again."""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import structlog
import structlog.testing

from costart.adapters.slurm.adapter import SlurmAdapter, SlurmConfig
from costart.adapters.slurm.cluster_view import ViewedNode
from costart.agent.accounts import Accounts
from costart.rest.client import Client
from tests.adapters.slurm.test_ledger import RecordedSlurm


class ServeView:
    """`serve` as the adapter's node pass sees it: each node's view, and the calls."""

    def __init__(self) -> None:
        self.gpus = {"n1": 4, "n2": 4, "n3": 4, "n4": 4}
        self.status = {"n1": "up", "n2": "up", "n3": "drained", "n4": "up"}
        self.puts: list[tuple[str, dict[str, Any]]] = []

    def call(self, method: str, path: str, _type: Any, json: Any = None) -> Any:
        node = path.split("/")[3]
        if method == "GET" and path == f"/v1/nodes/{node}":
            return ViewedNode(node, self.gpus[node], 8, 31, self.status[node])
        if method == "PUT" and path.endswith("/status"):
            self.puts.append((node, json))
            self.status[node] = json["status"]
        return {}


def one_pass(adapter: SlurmAdapter) -> None:
    adapter._nodes(adapter.read())  # the node pass alone, no job work


def test_a_shortfall_drains_once_naming_why_and_agreement_brings_it_up(tmp_path: Path) -> None:
    serve = ServeView()
    config = SlurmConfig(nodes=("n1", "n2", "n3", "n4"), state_dir=tmp_path, accounts=Accounts({}))
    adapter = SlurmAdapter(config, cast(Client, serve), RecordedSlurm())
    one_pass(adapter)
    # n3 is drained in Slurm (an operator's drain), the others up: reported as such.
    assert [(n, body["status"]) for n, body in serve.puts] == [
        ("n1", "up"), ("n2", "up"), ("n3", "drained"), ("n4", "up"),
    ]  # fmt: skip
    assert all("note" not in body for _, body in serve.puts)

    serve.puts.clear()
    serve.gpus["n2"] = 8  # the cluster file says 8; Slurm reports 4
    for _ in range(3):
        one_pass(adapter)
    note = "slurm reports gpu=4 for n2, the cluster file says 8"
    assert serve.puts == [("n2", {"status": "drained", "note": note})]  # once, not per pass

    serve.puts.clear()
    serve.status["n2"] = "up"  # a restarted server forgot it: told again
    one_pass(adapter)
    assert serve.puts == [("n2", {"status": "drained", "note": note})]

    serve.puts.clear()
    serve.gpus["n2"] = 4  # they agree again
    one_pass(adapter)
    one_pass(adapter)
    assert serve.puts == [("n2", {"status": "up"})]


def test_a_slurm_node_the_adapter_does_not_front_is_logged_once(tmp_path: Path) -> None:
    serve = ServeView()
    config = SlurmConfig(nodes=("n1", "n2", "n3"), state_dir=tmp_path, accounts=Accounts({}))
    adapter = SlurmAdapter(config, cast(Client, serve), RecordedSlurm())
    with structlog.testing.capture_logs() as logs:
        for _ in range(3):
            one_pass(adapter)
    said = [e for e in logs if e["event"] == "Slurm nodes costart does not place on"]
    assert [e["detail"] for e in said] == ["n4"]
    assert all(node != "n4" for node, _ in serve.puts)  # nothing reported for it
