"""Slurm's other work as the `HostAllocator`'s host load: the allocator contract suite
run over it, and outside jobs read from recorded Slurm output."""

from __future__ import annotations

from pathlib import Path

import pytest

from costart.adapters.slurm.adapter import Reading
from costart.adapters.slurm.host_load import SlurmHostLoad
from costart.adapters.slurm.jobs import parse_jobs
from costart.adapters.slurm.nodes import parse_nodes
from costart.domain.capacity import Capacity
from costart.domain.world import World
from costart.placement import Allocator, BindConflict, Cluster, HostAllocator
from tests.placement.allocator_contract import AllocatorContract
from tests.placement.builders import a_cluster

RECORDED = Path(__file__).parent / "recorded"


def outside(jobs: str = "jobs-running-held.txt") -> dict[str, Capacity]:
    """The outside use per node of a recorded `scontrol show job -o`."""
    nodes = {n.name: n for n in parse_nodes((RECORDED / "nodes-busy-drained.txt").read_text())}
    found = parse_jobs((RECORDED / jobs).read_text())
    return Reading(nodes, (), {}, [j for j in found if j.identity is None], []).outside_use()


class TestAllocatorContractOverSlurm(AllocatorContract):
    """The contract holds over a Slurm load (these clusters' nodes carry no Slurm job)."""

    def create_allocator(self, cluster: Cluster) -> Allocator:
        return HostAllocator(cluster, SlurmHostLoad([n.name for n in cluster.nodes], outside))


def test_outside_jobs_are_not_free() -> None:
    load = SlurmHostLoad(["n1", "n2", "n3", "n4", "elsewhere"], outside)
    gpu_job = Capacity(gpu=2, cpu=3, mem_gb=3)  # the running outside GPU job on n2
    assert list(load.outside_use()) == [Capacity(), gpu_job, Capacity(), Capacity(), Capacity()]
    assert outside("jobs-mixed.txt") == {"n4": Capacity(cpu=4, mem_gb=2)}


def test_an_outside_job_started_between_reading_and_bind_refuses_the_bind() -> None:
    cluster = a_cluster(blocks=1, racks=1, nodes=4)
    names = [node.name for node in cluster.nodes]
    # Slurm as read at the session's start (no job on n2), then at the bind (the GPU job).
    readings = [outside("jobs-mixed.txt"), outside()]
    as_cluster = dict(zip(["n1", "n2", "n3", "n4"], names, strict=True))
    load = SlurmHostLoad(names, lambda: {as_cluster[k]: v for k, v in readings.pop(0).items()})
    allocator = HostAllocator(cluster, load)
    before = allocator.free_capacity(World())[1]
    with pytest.raises(BindConflict) as raced:
        allocator.reserve(names[1], Capacity(gpu=1, cpu=1, mem_gb=1))
    assert allocator.conflicts == 1 and allocator.binds == 0
    taken = (before.gpu - raced.value.free.gpu, before.cpu - raced.value.free.cpu)
    assert taken == (2, 3)  # what the outside job took
