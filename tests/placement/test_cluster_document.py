"""A cluster definition written as a cluster file reads back equal: the repository's
clusters, the trace-built ones, and one with every optional field."""

from __future__ import annotations

from pathlib import Path

import pytest

from costart.placement.cluster_file import cluster_document, load_cluster, parse_cluster
from costart.sim.trace_setup import TraceOptions, trace_setup

ROOT = Path(__file__).resolve().parents[2]
TRACES = ROOT / "tests" / "data" / "traces"


@pytest.mark.parametrize("path", sorted((ROOT / "scenarios").glob("cluster-*.toml")), ids=str)
def test_a_cluster_file_reads_back_equal(path: Path) -> None:
    definition = load_cluster(path)
    assert parse_cluster(cluster_document(definition)) == definition


@pytest.mark.parametrize("kind", ["pai", "dlrm"])
def test_a_trace_built_cluster_reads_back_equal(kind: str) -> None:
    definition = trace_setup(kind, TRACES, 1, TraceOptions(max_groups=20)).cluster
    assert parse_cluster(cluster_document(definition)) == definition


def test_every_optional_field_and_status_reads_back() -> None:
    definition = parse_cluster(
        """
levels = ["zone", "rack"]
[placement_groups.serve-racks]
level = "rack"
policy = "spread"
required = false
[placement_groups.train-zone]
level = "zone"
required = true
[[nodes]]
name = "a.1"
path = ["z1", "r1"]
gpu = 8
gpu_type = "H100"
labels = { pool = "train", "team/x" = "rl" }
status = "drained"
[[nodes]]
name = "b-2"
path = ["z1", "r2"]
cpu = 4
status = "down"
"""
    )
    written = cluster_document(definition)
    assert parse_cluster(written) == definition
    assert definition.down == (("a.1", "drained"), ("b-2", "down"))
