"""Test oracles for placement: slow, obviously right counts from scratch that the
incremental machinery is compared with. They live here, not in `costart/`, because no
production path may depend on them."""

from __future__ import annotations

from costart.domain.world import World
from costart.placement.cluster import Cluster


def used_capacity(world: World, cluster: Cluster) -> tuple[list[int], list[int], list[int]]:
    """GPUs, CPUs and GiB used per node index: every live member's holds and placements.
    Three flat lists, not a list per node: this runs every session over every node, and
    per-node containers would feed the cyclic garbage collector."""
    gpu, cpu, mem = [0] * len(cluster), [0] * len(cluster), [0] * len(cluster)
    index = cluster.index
    for group in world.live_groups():
        for member in world.members_of(group):
            shape = member.spec.shape
            for assignment in (*member.held, *member.assignments):
                i = index.get(assignment.node)
                if i is None:
                    continue  # a node removed from the cluster: nothing to account against
                gpu[i] += shape.gpu
                cpu[i] += shape.cpu
                mem[i] += shape.mem_gb
    return gpu, cpu, mem
