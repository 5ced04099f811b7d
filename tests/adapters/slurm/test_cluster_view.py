"""Slurm's nodes beside costart's cluster view (ADR 0120), from `scontrol show node -o`
recorded from the test cluster's real daemons (see recorded/README.md)."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from costart.adapters.slurm.cluster_view import ViewedNode, cluster_toml, shortfall, surplus
from costart.adapters.slurm.nodes import parse_nodes
from costart.adapters.slurm.records import SlurmOutputError
from costart.placement.cluster_file import parse_cluster

RECORDED = Path(__file__).parent / "recorded"


def nodes(name: str = "nodes-busy-drained.txt"):
    return parse_nodes((RECORDED / name).read_text())


def view(name: str, gpu: int = 4, cpu: int = 8, mem_gb: int = 31, gpu_type=None) -> ViewedNode:
    return ViewedNode(name, gpu=gpu, cpu=cpu, mem_gb=mem_gb, status="up", gpu_type=gpu_type)


def test_the_cluster_file_is_what_slurm_reports_in_name_order() -> None:
    listed = nodes()
    text = cluster_toml(reversed(listed))
    assert text == cluster_toml(listed)  # the order Slurm lists them in does not matter
    built = parse_cluster(text).build()
    assert [n.name for n in built.nodes] == ["n1", "n2", "n3", "n4"]
    n4 = built.nodes[3]
    assert (n4.gpu, n4.cpu, n4.mem_gb, n4.gpu_type) == (4, 8, 31, None)  # 32000 MB: 31 GB
    assert dict(n4.labels) == {"feature/rack2": "yes", "partition/main": "yes"}
    assert built.levels == ()


def test_a_gres_naming_one_gpu_type_gives_the_type() -> None:
    text = (RECORDED / "node-gpu-alloc.txt").read_text().replace("Gres=gpu:4", "Gres=gpu:a100:4")
    (node,) = parse_nodes(text)
    assert node.gpu_type == "a100"
    (built,) = parse_cluster(cluster_toml([node])).build().nodes
    assert (built.gpu, built.gpu_type) == (4, "a100")
    mixed = text.replace("Gres=gpu:a100:4", "Gres=gpu:a100:2,gpu:v100:2")
    assert parse_nodes(mixed)[0].gpu_type is None


def test_a_feature_costart_cannot_take_as_a_label_fails_naming_it() -> None:
    text = (
        (RECORDED / "node-gpu-alloc.txt")
        .read_text()
        .replace("ActiveFeatures=rack1", "ActiveFeatures=-bad")
    )
    with pytest.raises(SlurmOutputError, match=r"node n2: feature '-bad'"):
        cluster_toml(parse_nodes(text))


def test_slurm_offering_what_costart_has_is_no_mismatch() -> None:
    for node in nodes():
        assert shortfall(node.name, node, view(node.name)) == ""
        assert surplus(node, view(node.name)) == ""


def test_less_in_slurm_than_in_the_cluster_file_is_named() -> None:
    n1 = nodes()[0]
    assert shortfall("n1", n1, view("n1", gpu=8)) == (
        "slurm reports gpu=4 for n1, the cluster file says 8"
    )
    assert shortfall("n1", n1, view("n1", cpu=16, mem_gb=64)) == (
        "slurm reports cpu=8, mem_gb=31 for n1, the cluster file says 16, 64"
    )
    assert shortfall("n1", n1, view("n1", gpu_type="H100")) == (
        "slurm reports gpu type none for n1, the cluster file says gpu type H100"
    )
    assert shortfall("n1", None, view("n1")) == "slurm no longer has node n1, the cluster file does"
    smaller = msgspec.structs.replace(n1, capacity=msgspec.structs.replace(n1.capacity, gpu=2))
    assert shortfall("n1", smaller, view("n1")) == (
        "slurm reports gpu=2 for n1, the cluster file says 4"
    )


def test_more_in_slurm_is_a_surplus_not_a_shortfall() -> None:
    n1 = nodes()[0]
    assert shortfall("n1", n1, view("n1", gpu=2)) == ""
    assert surplus(n1, view("n1", gpu=2)) == "gpu=4 (cluster file 2)"


def test_the_docs_show_what_the_command_writes() -> None:
    """docs/slurm.md's cluster file is this module's output for the recorded n1 and n2."""
    page = (Path(__file__).parents[3] / "docs" / "slurm.md").read_text()
    assert f"```toml\n{cluster_toml(nodes()[:2])}```" in page
