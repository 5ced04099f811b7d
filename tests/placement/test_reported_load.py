"""Outside use as a node's agent reports it (`ReportedLoad`, ADR 0118): the allocator
contract over it, the use counted out of free capacity, a report that arrives between a
session's reading and its bind refusing the bind, pend reasons that name it, and bad
reports refused."""

from __future__ import annotations

import pytest

from costart.bootstrap import Settings, bootstrap
from costart.domain.capacity import Capacity
from costart.domain.world import World
from costart.placement import Allocator, BindConflict, Cluster, HostAllocator
from costart.placement.incremental import IncrementalStep
from costart.placement.reported_load import MAX_NAMED_NODES, ReportedLoad
from tests.builders import ManualClock

from .allocator_contract import AllocatorContract
from .builders import a_cluster, a_group
from .host_loads import ScriptedLoad


class TestReportedLoadContract(AllocatorContract):
    def create_allocator(self, cluster: Cluster) -> Allocator:
        return HostAllocator(cluster, ReportedLoad([n.name for n in cluster.nodes]))


def _reported(nodes: int = 3) -> tuple[Cluster, ReportedLoad, HostAllocator]:
    cluster = a_cluster(blocks=1, racks=1, nodes=nodes)
    load = ReportedLoad([n.name for n in cluster.nodes])
    return cluster, load, HostAllocator(cluster, load)


def test_reported_use_is_not_free_and_a_new_report_replaces_the_last() -> None:
    _, load, allocator = _reported()
    load.report("b0-r0-n1", Capacity(3, 10, 100), "slurm")
    assert allocator.free_capacity(World())[1] == Capacity(5, 54, 412)
    allocator.commit()
    load.report("b0-r0-n1", Capacity(), "slurm")
    assert allocator.free_capacity(World())[1] == Capacity(8, 64, 512)


def test_use_reported_between_the_reading_and_a_bind_refuses_the_bind() -> None:
    _, load, allocator = _reported()
    allocator.free_capacity(World())
    allocator.reserve("b0-r0-n0", Capacity(gpu=2))
    load.report("b0-r0-n0", Capacity(gpu=5), "slurm")  # another scheduler started a job
    with pytest.raises(BindConflict, match="b0-r0-n0") as refused:
        allocator.reserve("b0-r0-n0", Capacity(gpu=2))
    assert refused.value.free == Capacity(gpu=1, cpu=64, mem_gb=512)  # 8 - 2 bound - 5
    allocator.abort()
    assert allocator.free_capacity(World())[0] == Capacity(3, 64, 512)


def test_bad_reports_are_refused_naming_the_problem() -> None:
    _, load, _ = _reported()
    with pytest.raises(KeyError, match="nowhere"):
        load.report("nowhere", Capacity(), "slurm")
    with pytest.raises(ValueError, match="source 'Slurm!'"):
        load.report("b0-r0-n0", Capacity(), "Slurm!")
    with pytest.raises(ValueError, match="negative"):
        load.report("b0-r0-n0", Capacity(gpu=-1), "slurm")
    assert load.reported("b0-r0-n0") == Capacity()


def test_a_group_waiting_for_capacity_names_the_outside_use_and_places_once_it_is_gone() -> None:
    cluster = a_cluster(blocks=1, racks=1, nodes=6)
    load = ReportedLoad([n.name for n in cluster.nodes])
    step = IncrementalStep.on_host(cluster, load)
    clock = ManualClock()
    controller = bootstrap(Settings(), placement=step, clock=clock)
    for node in cluster.nodes:
        load.report(node.name, Capacity(gpu=1, cpu=2, mem_gb=3), "slurm")
    controller.submit(a_group("whole").with_member("w", gpu=8, tasks=1).build())
    controller.schedule(clock.advance(1.0))
    reason = controller.group("whole").pend_reason
    assert reason is not None and reason.cls == "capacity", reason
    named = [n.name for n in cluster.nodes[:MAX_NAMED_NODES]]
    text = ", ".join(f"{n} {{gpu:1, cpu:2, mem_gb:3}} (slurm)" for n in named)
    assert reason.message.endswith(f"; outside work holds {text} and 2 more nodes"), reason
    # The use moves: the reason says the new numbers (a new reason, recorded).
    load.report(cluster.nodes[0].name, Capacity(gpu=2), "slurm")
    controller.schedule(clock.advance(1.0))
    moved = controller.group("whole").pend_reason
    assert moved is not None and f"{cluster.nodes[0].name} {{gpu:2}} (slurm)" in moved.message
    # One node's outside work ends: the group is placed there.
    load.report(cluster.nodes[4].name, Capacity(), "slurm")
    controller.schedule(clock.advance(1.0))
    placed = controller.members("whole")[0].assignments
    assert [a.node for a in placed] == [cluster.nodes[4].name]


def test_a_load_that_cannot_describe_itself_leaves_reasons_unchanged() -> None:
    """The simulator's outside load (no `describe`): its reasons (and so its recorded
    logs) stay as they were."""
    cluster = a_cluster(blocks=1, racks=1, nodes=2)
    load = ScriptedLoad(cluster)
    load.put("b0-r0-n0", gpu=8)
    allocator = HostAllocator(cluster, load)
    allocator.free_capacity(World())
    assert allocator.outside_note() is None
    _, _, described = _reported(2)
    described.free_capacity(World())
    assert described.outside_note() is None  # nothing reported: nothing to say
