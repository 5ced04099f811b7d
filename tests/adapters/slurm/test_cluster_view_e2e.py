"""Slurm's nodes as costart's cluster view, against the real daemons (ADR 0120): `serve`
places from the file `costart slurm cluster-file` wrote, and a node whose GPUs Slurm
takes away (`scontrol update NodeName=n4 Gres=gpu:0`) is drained with the mismatch
named, so costart stops placing there, until Slurm offers them again."""

from __future__ import annotations

from typing import Any

import pytest

from costart.adapters.slurm.nodes import parse_nodes
from costart.placement.cluster_file import parse_cluster
from tests.adapters.slurm.daemons import NODES, SlurmCluster
from tests.adapters.slurm.harness import SlurmFront
from tests.agent.harness import wait_until

pytestmark = pytest.mark.timeout(300)
REASON = "slurm reports gpu=0 for n4, the cluster file says 4"


def test_serve_places_from_the_cluster_file_written_from_slurms_nodes(front: SlurmFront) -> None:
    built = parse_cluster((front.directory / "cluster.toml").read_text()).build()
    assert [(n.name, n.gpu, n.cpu, n.mem_gb) for n in built.nodes] == [
        (name, 4, 8, 31) for name in NODES
    ]
    assert dict(built.nodes[0].labels) == {
        "feature/rack1": "yes",
        "partition/gpu": "yes",
        "partition/main": "yes",
    }
    assert dict(built.nodes[3].labels)["feature/rack2"] == "yes"


def every_node_whole(name: str) -> dict[str, Any]:
    """Four tasks of a whole node each: it fits only with all four nodes up."""
    return {
        "name": name,
        "owner": "alice",
        "members": [
            {
                "name": "trainer",
                "kind": "job",
                "tasks": 4,
                "shape": {"gpu": 4, "cpu": 2, "mem_gb": 4},
                "run": {"argv": ["/bin/sh", "-c", "exec sleep 600"]},
            }
        ],
    }


def slurm_gpus(slurm: SlurmCluster, node: str) -> int:
    (found,) = parse_nodes(slurm.run("scontrol", "-d", "show", "node", "-o", node).stdout)
    return found.capacity.gpu


def test_a_node_slurm_takes_gpus_from_is_drained_naming_why_and_up_again(
    front: SlurmFront,
) -> None:
    def status() -> str:
        return str(front.api.call("GET", "/v1/nodes/n4", dict[str, Any])["status"])

    def reason() -> str:
        found = front.group("whole")["group"].get("pend_reason") or {}
        return str(found.get("message", ""))

    assert status() == "up"
    try:
        front.slurm.run("scontrol", "update", "NodeName=n4", "Gres=gpu:0")
        assert slurm_gpus(front.slurm, "n4") == 0
        wait_until(lambda: status() == "drained", 30, lambda: f"n4 drained\n{front.logs()}")
        gid = front.submit(every_node_whole("whole"))
        wait_until(
            lambda: "trainer" in reason() and "{gpu:4, cpu:2, mem_gb:4}" in reason(),
            60,
            lambda: f"a reason naming what is missing, got {reason()!r}\n{front.logs()}",
        )
        assert front.state("whole") in ("PENDING", "RESERVING"), reason()
        assert "n4" not in front.placed_nodes("whole").values()
        assert front.jobs(gid) == []  # nothing reached Slurm
        # Logged once with its reason, over the many passes (0.3 s apart) since.
        log = front.adapter.log.read_text()
        assert log.count(REASON) == 1, log
    finally:
        # Slurm lowers a node's GRES count on request but never raises it again: its
        # configuration, read again, gives the four back (running jobs are kept).
        front.slurm.run("scontrol", "reconfigure")
    assert slurm_gpus(front.slurm, "n4") == 4
    wait_until(lambda: status() == "up", 30, lambda: f"n4 up again\n{front.logs()}")
    wait_until(
        lambda: sorted(front.placed_nodes("whole").values()) == list(NODES),
        60,
        lambda: f"one task on each node, n4 too\n{front.logs()}",
    )
