"""Slurm's nodes as costart's cluster view, against the real daemons (ADR 0120): `serve`
places from the file `costart slurm cluster-file` wrote, and a node whose GPUs Slurm
takes away (`scontrol update NodeName=n4 Gres=gpu:0`) is drained with the mismatch
named, so costart stops placing there (a group that needs it pends)."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from costart.adapters.slurm.nodes import parse_nodes
from costart.placement.cluster_file import parse_cluster
from tests.adapters.slurm.daemons import NODES, SlurmCluster
from tests.adapters.slurm.harness import SlurmFront, whole_node_group
from tests.agent.harness import wait_until

pytestmark = pytest.mark.timeout(300)
REASON = "slurm reports gpu=0 for n4, the cluster file says 4"


@pytest.fixture
def own_front(tmp_path: Path) -> Iterator[SlurmFront]:
    """`serve` and the adapter in front of a Slurm cluster of this test's own: Slurm
    lowers a node's GRES on request but never raises it again (after `scontrol
    reconfigure` it even lists the GPUs while refusing jobs that ask for them), so the
    session's cluster is not the place to take GPUs away."""
    root = Path(tempfile.mkdtemp(prefix="costart-slurm-"))  # open to munged and `nobody`
    cluster = SlurmCluster(root)
    try:
        cluster.start()
        running = SlurmFront(tmp_path, cluster)
        try:
            yield running
        finally:
            running.close()
    finally:
        cluster.stop()
        shutil.rmtree(root, ignore_errors=True)


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


def slurm_gpus(slurm: SlurmCluster, node: str) -> int:
    (found,) = parse_nodes(slurm.run("scontrol", "-d", "show", "node", "-o", node).stdout)
    return found.capacity.gpu


def test_a_node_slurm_takes_gpus_from_is_drained_naming_why(own_front: SlurmFront) -> None:
    front = own_front

    def status() -> str:
        return str(front.api.call("GET", "/v1/nodes/n4", dict[str, Any])["status"])

    def reason() -> str:
        found = front.group("whole")["group"].get("pend_reason") or {}
        return str(found.get("message", ""))

    assert status() == "up"
    front.slurm.run("scontrol", "update", "NodeName=n4", "Gres=gpu:0")
    assert slurm_gpus(front.slurm, "n4") == 0
    wait_until(lambda: status() == "drained", 30, lambda: f"n4 drained\n{front.logs()}")
    gid = front.submit(whole_node_group("whole", tasks=4))
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

    # A node Slurm no longer has at all: drained at once, naming it (then down, as
    # nothing heartbeats for it any more).
    front.slurm.run("scontrol", "delete", "NodeName=n3")
    wait_until(
        lambda: front.api.call("GET", "/v1/nodes/n3", dict[str, Any])["status"] != "up",
        30,
        lambda: f"n3 drained\n{front.logs()}",
    )
    gone = "slurm no longer has node n3, the cluster file does"
    wait_until(lambda: gone in front.adapter.log.read_text(), 10, front.logs)
