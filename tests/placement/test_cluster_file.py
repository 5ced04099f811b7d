"""The cluster file: strict decoding, errors that name the field, the shipped scenarios."""

from __future__ import annotations

from pathlib import Path

import pytest

from costart.placement import ClusterError, load_cluster, parse_cluster

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"

GOOD = """
levels = ["block", "rack"]
[placement_groups.pg-a]
level = "block"
policy = "pack"
required = true
[[nodes]]
name = "n1"
path = ["b0", "r0"]
gpu = 8
gpu_type = "H100"
cpu = 64
mem_gb = 512
labels = { pool = "train" }
[[nodes]]
name = "n2"
path = ["b0", "r1"]
cpu = 32
status = "drained"
[[generate]]
node_prefix = "g"
under = ["b1"]
counts = [2, 3]
gpu = 4
"""


def test_a_cluster_file_defines_nodes_generated_racks_status_and_placement_groups() -> None:
    definition = parse_cluster(GOOD)
    cluster = definition.build()
    assert len(cluster) == 8
    assert cluster.domains("block") == ["b0", "b1"]
    assert cluster.domains("rack") == ["b0/r0", "b0/r1", "b1/r0", "b1/r1"]
    assert [n.name for n in cluster.nodes[:2]] == ["n1", "n2"]
    assert cluster.status[cluster.index["n2"]] == "drained"
    assert dict(definition.placement_groups)["pg-a"].level == "block"
    assert dict(cluster.nodes[cluster.index["n1"]].labels) == {"pool": "train"}


@pytest.mark.parametrize(
    ("document", "path", "reason"),
    [
        ('levels = ["rack"]\n[[nodes]]\nname="a"\npath=["r"]\ngpus=1', "nodes[0]", "unknown field"),
        ('levels = ["rack"]\n[[nodes]]\nname="a"\npath=["r"]\ngpu="x"', "nodes[0].gpu", "int"),
        (
            'levels = ["rack"]\n[[nodes]]\nname="a"\npath=["r", "x"]\ngpu=1',
            "nodes[0].path",
            "one name each",
        ),
        ('levels = ["rack"]\n[[nodes]]\nname="a"\npath=["r"]\ngpu=-1', "nodes[0].gpu", "negative"),
        (
            'levels = ["rack"]\n[[nodes]]\nname="a"\npath=["r"]\ngpu=1\nstatus="gone"',
            "nodes[0].status",
            "Invalid enum",
        ),
        (
            'levels = ["rack"]\n[[generate]]\nnode_prefix="a"\ncounts=[2]\ngpu=1',
            "generate[0].counts",
            "needs 2 numbers",
        ),
        (
            'levels = ["rack"]\n[[generate]]\nnode_prefix="a"\ncounts=[2, 0]\ngpu=1',
            "generate[0].counts[1]",
            "positive",
        ),
        ('levels = ["node"]\n[[nodes]]\nname="a"\npath=["r"]\ngpu=1', "levels[0]", "bad level"),
        ('levels = ["rack"]', "nodes", "at least one node"),
        (
            'levels = ["rack"]\n[[nodes]]\nname="a"\npath=["r"]\ngpu=1\n[[nodes]]\nname="a"\npath=["r"]\ngpu=1',
            "nodes",
            "duplicate node name",
        ),
        (
            'levels = ["rack"]\n[placement_groups.p]\nlevel="zone"\n[[nodes]]\nname="a"\npath=["r"]\ngpu=1',
            "placement_groups.p.level",
            "unknown level",
        ),
    ],
)
def test_a_bad_cluster_file_names_the_field(document: str, path: str, reason: str) -> None:
    with pytest.raises(ClusterError) as caught:
        parse_cluster(document)
    assert caught.value.path == path
    assert reason in caught.value.reason


@pytest.mark.parametrize(
    ("file", "nodes", "blocks"), [("cluster-demo.toml", 64, 2), ("cluster-4096.toml", 4096, 16)]
)
def test_the_shipped_clusters_load(file: str, nodes: int, blocks: int) -> None:
    cluster = load_cluster(SCENARIOS / file).build()
    assert len(cluster) == nodes
    assert len(cluster.domains("block")) == blocks
