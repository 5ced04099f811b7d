"""The throwaway cluster itself: its nodes read back as costart's view, and the
outputs the parsers were recorded from still look the same on a live cluster."""

from __future__ import annotations

import time

from costart.adapters.slurm.jobs import parse_jobs
from costart.adapters.slurm.nodes import parse_nodes
from costart.domain.capacity import Capacity
from tests.adapters.slurm.daemons import SlurmCluster


def test_four_nodes_with_gpus(fresh_slurm: SlurmCluster) -> None:
    nodes = parse_nodes(fresh_slurm.run("scontrol", "-d", "show", "node", "-o").stdout)
    assert [(n.name, n.status, n.capacity) for n in nodes] == [
        (name, "up", Capacity(gpu=4, cpu=8, mem_gb=31)) for name in ("n1", "n2", "n3", "n4")
    ]


def test_an_outside_gpu_job_is_seen_on_its_node(fresh_slurm: SlurmCluster) -> None:
    job = fresh_slurm.run(
        "sbatch",
        "--parsable",
        "--uid=nobody",
        "--chdir=/",
        "--output=/dev/null",
        "-w",
        "n2",
        "-c",
        "3",
        "--mem=3000M",
        "--gres=gpu:2",
        "-J",
        "outside",
        "--wrap",
        "sleep 60",
    ).stdout.strip()
    for _ in range(100):
        (found,) = parse_jobs(fresh_slurm.run("scontrol", "show", "job", "-o", job).stdout)
        if found.phase == "running":
            break
        time.sleep(0.1)
    assert found.allocated == Capacity(gpu=2, cpu=3, mem_gb=3)
    nodes = {
        n.name: n
        for n in parse_nodes(fresh_slurm.run("scontrol", "-d", "show", "node", "-o").stdout)
    }
    assert nodes["n2"].allocated == Capacity(gpu=2, cpu=3, mem_gb=3)
    assert nodes["n1"].allocated == Capacity()
