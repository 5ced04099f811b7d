"""The recommended-mode rule (ADR 0115): its inputs and outputs pinned, on hand-made
clusters and on the repository's demo cluster and specs."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from costart.domain.spec import parse_spec, spec_from_object
from costart.domain.spec_types import GroupSpec
from costart.placement import Cluster, Node
from costart.placement.cluster_file import load_cluster
from costart.placement.recommended import (
    SHARE_TABLE,
    gang_gpus,
    pool_gpus,
    recommended_mode,
)

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"


def demo() -> Cluster:
    """256 H100 GPUs in block b0 (8 per node), 128 L40S in block b1 (4 per node)."""
    return load_cluster(SCENARIOS / "cluster-demo.toml").build()


def gang(tasks: int, gpu: int = 8, gpu_type: str | None = "H100", **placement: Any) -> GroupSpec:
    shape: dict[str, Any] = {"gpu": gpu, "cpu": 8, "mem_gb": 64}
    if gpu_type is not None:
        shape["gpu_type"] = gpu_type
    return spec_from_object(
        {
            "name": "g",
            "owner": "alice",
            "placement": {"mode": "atomic", **placement},
            "members": [{"name": "m", "kind": "job", "tasks": tasks, "shape": shape}],
        }
    )


def test_the_table_covers_every_share_in_decreasing_order() -> None:
    thresholds = [row.at_least for row in SHARE_TABLE]
    assert thresholds == sorted(thresholds, reverse=True)
    assert thresholds[-1] == 0


@pytest.mark.parametrize(
    ("tasks", "mode"),
    [
        (1, "atomic"),  # 8 of 256
        (4, "atomic"),  # 32 of 256: a DDP gang
        (10, "atomic"),  # 80 of 256 = 31%
        (11, "plan-ahead"),  # 88 of 256 = 34%: the first size at a third or more
        (12, "plan-ahead"),  # 96 of 256: sim-starvation's gangs
        (16, "plan-ahead"),  # 128 of 256: half the partition
        (32, "plan-ahead"),  # the whole partition
    ],
)
def test_h100_gangs_by_share_of_the_h100_partition(tasks: int, mode: str) -> None:
    chosen = recommended_mode(gang(tasks), demo())
    assert (chosen.mode, chosen.gang_gpus, chosen.pool_gpus) == (mode, 8 * tasks, 256)


def test_the_boundary_is_exactly_a_third() -> None:
    # 3 nodes of 8 GPUs: a gang of 8 is exactly a third, 7 just under.
    cluster = Cluster([], [Node(f"n{i}", (), gpu=8, cpu=64, mem_gb=512) for i in range(3)])
    assert recommended_mode(gang(1, gpu=8, gpu_type=None), cluster).mode == "plan-ahead"
    assert recommended_mode(gang(1, gpu=7, gpu_type=None), cluster).mode == "atomic"
    assert recommended_mode(gang(1, gpu=8, gpu_type=None), cluster).share == Fraction(1, 3)


def test_an_untyped_gang_counts_every_node_it_fits() -> None:
    # 4-GPU tasks fit the H100 and the L40S nodes: pool 384; 32 tasks = 128 = a third.
    cluster = demo()
    assert pool_gpus(gang(32, gpu=4, gpu_type=None), cluster) == 384
    assert recommended_mode(gang(32, gpu=4, gpu_type=None), cluster).mode == "plan-ahead"
    assert recommended_mode(gang(31, gpu=4, gpu_type=None), cluster).mode == "atomic"
    # 8-GPU tasks fit only the 8-GPU nodes, whatever their type.
    assert pool_gpus(gang(1, gpu=8, gpu_type=None), cluster) == 256


def test_a_shape_too_big_for_a_node_leaves_it_out_of_the_pool() -> None:
    cluster = Cluster(
        [],
        [
            Node("big", (), gpu=8, cpu=64, mem_gb=1024),
            Node("small-mem", (), gpu=8, cpu=64, mem_gb=32),
        ],
    )
    assert pool_gpus(gang(1, gpu=4, gpu_type=None), cluster) == 8  # needs 64 GB


def test_a_required_domain_bounds_the_pool() -> None:
    required = {"topology": {"level": "block", "policy": "pack", "required": True}}
    preferred = {"topology": {"level": "block", "policy": "pack", "required": False}}
    cluster = demo()
    # 4-GPU tasks: the H100 block has 256, the L40S block 128; the largest block counts.
    assert pool_gpus(gang(1, gpu=4, gpu_type=None, **required), cluster) == 256
    assert pool_gpus(gang(1, gpu=4, gpu_type=None, **preferred), cluster) == 384
    assert recommended_mode(gang(22, gpu=4, gpu_type=None, **required), cluster).mode == (
        "plan-ahead"
    )  # 88 of 256


def test_gang_gpus_count_what_must_start_together() -> None:
    rl = parse_spec((SCENARIOS / "rl-post-training.toml").read_bytes(), "toml")
    # trainer 4 x 8 + rollout min_start 8 x 1 + reward 1 x 1 + reference 2 x 2.
    assert gang_gpus(rl) == 32 + 8 + 1 + 4
    chosen = recommended_mode(rl, demo())
    assert (chosen.mode, chosen.pool_gpus) == ("atomic", 256)
    serving = parse_spec((SCENARIOS / "disaggregated-serving.toml").read_bytes(), "toml")
    assert gang_gpus(serving) == 2 * 4 + 4 * 2
    assert recommended_mode(serving, demo()).mode == "atomic"


def test_no_gpus_is_atomic_and_no_pool_keeps_the_specs_mode() -> None:
    cpu_only = spec_from_object(
        {
            "name": "c",
            "owner": "alice",
            "placement": {"mode": "reserve"},
            "members": [{"name": "m", "kind": "job", "tasks": 2, "shape": {"cpu": 4}}],
        }
    )
    assert recommended_mode(cpu_only, demo()).mode == "atomic"
    nowhere = gang(1, gpu_type="B200", mode="reserve")
    chosen = recommended_mode(nowhere, demo())
    assert (chosen.mode, chosen.pool_gpus) == ("reserve", 0)  # the spec's own mode
    assert "no node" in chosen.text()


def test_the_text_names_the_figures() -> None:
    text = recommended_mode(gang(16), demo()).text()
    assert text.startswith("plan-ahead: 128 of 256 GPUs in its pool (50%); a third or more")
