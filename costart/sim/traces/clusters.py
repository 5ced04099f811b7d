"""Clusters for the real traces, and the knobs that adapt a trace to a simulation.

* PAI 2020 ships its machine list: every machine is a node, pooled by GPU type.
* The DLRM 2025 trace has no machine list: a synthetic cluster is sized to the peak of
  what the imported groups ask for at once (GPU nodes for HN, CPU nodes for CN).
"""

from __future__ import annotations

import math
from pathlib import Path

import msgspec

from costart.domain.spec_types import MemberSpec
from costart.placement.cluster import Node
from costart.placement.cluster_file import ClusterDefinition
from costart.sim.distributions import Dist, describe
from costart.sim.traces.pai import read_machines
from costart.sim.workload import MemberBehaviour, Workload

PAI_LEVELS = ("pool",)
GPU_NODE = {"gpu": 8, "cpu": 128, "mem_gb": 1024}


def pai_cluster(traces: Path) -> ClusterDefinition:
    """The PAI machine list as a cluster: one node per machine, in a pool per GPU type."""
    nodes = []
    for machine in read_machines(traces):
        pool = "".join(ch if ch.isalnum() else "-" for ch in machine.gpu_type.lower())
        nodes.append(
            Node(
                name=machine.name,
                path=(pool or "none",),
                gpu=machine.gpu,
                cpu=machine.cpu,
                mem_gb=machine.mem_gb,
                gpu_type=machine.gpu_type if machine.gpu else None,
            )
        )
    return ClusterDefinition(levels=PAI_LEVELS, nodes=tuple(nodes), down=(), placement_groups=())


def _peak(workload: Workload, resource: str, kind_gpu: bool) -> int:
    """The most of ``resource`` the groups ask for at one time (arrival to end)."""
    changes: list[tuple[int, int]] = []
    for arrival in workload.arrivals:
        amount = sum(
            getattr(m.shape, resource) * m.count
            for m in arrival.spec.members
            if (m.shape.gpu > 0) == kind_gpu
        )
        end = arrival.at_ns + (arrival.lifetime_ns or 0)
        changes += [(arrival.at_ns, amount), (end, -amount)]
    level = peak = 0
    for _, delta in sorted(changes, key=lambda c: (c[0], c[1])):
        level += delta
        peak = max(peak, level)
    return peak


def _largest(workload: Workload, resource: str) -> int:
    return max(
        (getattr(m.shape, resource) for a in workload.arrivals for m in a.spec.members), default=0
    )


def dlrm_cluster(workload: Workload, headroom: float = 1.0) -> ClusterDefinition:
    """GPU nodes for the HN peak, CPU nodes for the CN peak, times ``headroom``."""
    gpu_nodes = max(1, math.ceil(_peak(workload, "gpu", True) * headroom / GPU_NODE["gpu"]))
    cpu_size = max(192, _largest(workload, "cpu"))
    mem_size = max(1536, _largest(workload, "mem_gb"))
    cpu_nodes = max(1, math.ceil(_peak(workload, "cpu", False) * headroom / cpu_size))
    nodes = [
        Node(f"hn{i:04d}", ("gpu",), gpu=8, cpu=128, mem_gb=max(1024, mem_size), gpu_type=None)
        for i in range(gpu_nodes)
    ]
    nodes += [Node(f"cn{i:04d}", ("cpu",), cpu=cpu_size, mem_gb=mem_size) for i in range(cpu_nodes)]
    return ClusterDefinition(levels=PAI_LEVELS, nodes=tuple(nodes), down=(), placement_groups=())


def compress_arrivals(workload: Workload, factor: float) -> Workload:
    """Arrivals ``factor`` times closer together (run times unchanged): the sample is a
    thin slice of a month, so without it the cluster sits nearly idle."""
    if factor == 1 or not workload.arrivals:
        return workload
    first = workload.arrivals[0].at_ns
    arrivals = [
        msgspec.structs.replace(a, at_ns=first + int((a.at_ns - first) / factor))
        for a in workload.arrivals
    ]
    note = f"arrivals compressed {factor:g}x toward the first one (run times unchanged)"
    return msgspec.structs.replace(
        workload, arrivals=arrivals, assumptions=[*workload.assumptions, note]
    )


def with_claims(workload: Workload, claim: str, delay: Dist, fail: float = 0.0) -> Workload:
    """Give every member one claim (e.g. its image pull) READY after ``delay``: traces
    carry no claim data, and without claims every start is instant."""
    arrivals = []
    for a in workload.arrivals:
        members: list[MemberSpec] = [
            msgspec.structs.replace(m, claims=(*m.claims, claim)) for m in a.spec.members
        ]
        behaviour = {
            m.name: MemberBehaviour(claim_delay=delay, claim_fail=fail) for m in a.spec.members
        }
        spec = msgspec.structs.replace(a.spec, members=tuple(members))
        arrivals.append(msgspec.structs.replace(a, spec=spec, behaviour=behaviour))
    note = (
        f"every member has one claim {claim!r} READY after {describe(delay)}"
        + (f", FAILED with probability {fail}" if fail else "")
        + " (the trace has no claim data)"
    )
    return msgspec.structs.replace(
        workload, arrivals=arrivals, assumptions=[*workload.assumptions, note]
    )
