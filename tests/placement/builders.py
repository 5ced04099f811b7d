"""Fluent builders for placement tests: specs with shapes and topology, small clusters,
and a controller wired to a real `CoPlacementStep` on a manual clock."""

from __future__ import annotations

from typing import Any

from costart.bootstrap import Settings, bootstrap
from costart.domain.decisions import PlaceGroup
from costart.domain.events import Assignment
from costart.domain.invariants import check_world
from costart.domain.spec_types import GroupSpec, Topology
from costart.placement import Cluster, CoPlacementStep, InMemoryAllocator, Node
from tests.builders import GroupBuilder as BaseGroupBuilder
from tests.builders import ManualClock


class GroupBuilder(BaseGroupBuilder):
    """The shared builder; placement tests' restart rules allow many restarts."""

    def with_rule(  # type: ignore[override]
        self, action: str, members: tuple[str, ...] = ()
    ) -> GroupBuilder:
        super().with_rule(action, members=members, reasons=("any",), max_restarts=10)
        return self


def a_group(name: str = "g1", owner: str = "alice") -> GroupBuilder:
    return GroupBuilder(name, owner)


def a_cluster(
    blocks: int = 2,
    racks: int = 2,
    nodes: int = 4,
    gpu: int = 8,
    cpu: int = 64,
    mem_gb: int = 512,
    gpu_type: str | None = "H100",
) -> Cluster:
    """blocks × racks × nodes identical nodes, levels block/rack; names b0-r1-n2."""
    return Cluster(
        ["block", "rack"],
        [
            Node(
                f"b{b}-r{r}-n{n}",
                (f"b{b}", f"r{r}"),
                gpu=gpu,
                cpu=cpu,
                mem_gb=mem_gb,
                gpu_type=gpu_type,
            )
            for b in range(blocks)
            for r in range(racks)
            for n in range(nodes)
        ],
    )


def a_zoned_cluster(
    zones: int = 2,
    blocks: int = 2,
    racks: int = 2,
    nodes: int = 2,
    gpu: int = 8,
    gpu_types: tuple[str, ...] = ("H100",),
) -> Cluster:
    """zones × blocks × racks × nodes, levels zone/block/rack; names z0-b1-r0-n1. Zone z
    has GPU type ``gpu_types[z % len(gpu_types)]``."""
    return Cluster(
        ["zone", "block", "rack"],
        [
            Node(
                f"z{z}-b{b}-r{r}-n{n}",
                (f"z{z}", f"b{b}", f"r{r}"),
                gpu=gpu,
                cpu=16 * gpu,
                mem_gb=128 * gpu,
                gpu_type=gpu_types[z % len(gpu_types)],
            )
            for z in range(zones)
            for b in range(blocks)
            for r in range(racks)
            for n in range(nodes)
        ],
    )


def domain_of(node: str, level: str) -> str:
    """The domain of a node named by `a_zoned_cluster` at ``level`` ("z0-b1" for block)."""
    depth = {"zone": 1, "block": 2, "rack": 3, "node": 4}[level]
    return "-".join(node.split("-")[:depth])


class Rig:
    """A real Controller with a real placement step over an in-memory cluster."""

    def __init__(self, cluster: Cluster, placement_groups: dict[str, Topology] | None = None):
        self.cluster = cluster
        self.clock = ManualClock()
        self.step = CoPlacementStep(InMemoryAllocator(cluster), placement_groups)
        self.controller = bootstrap(Settings(), placement=self.step, clock=self.clock)

    def submit(self, *specs: GroupSpec) -> None:
        for spec in specs:
            self.controller.submit(spec)

    def session(self, advance_s: float = 1.0) -> list[Any]:
        now = self.clock.advance(advance_s)
        self.controller.tick(now)
        events = self.controller.schedule(now)
        self.check()
        return events

    def check(self) -> None:
        check_world(self.controller.world, self.cluster.capacities())

    def occupy(self, name: str, gpus_by_node: dict[str, int]) -> None:
        """A running group using exactly ``gpus_by_node`` (one 1-GPU task per GPU)."""
        tasks = sum(gpus_by_node.values())
        self.submit(a_group(name).with_member("w", gpu=1, tasks=tasks).build())
        nodes = [node for node, gpus in sorted(gpus_by_node.items()) for _ in range(gpus)]
        placement = {"w": tuple(Assignment(i, node) for i, node in enumerate(nodes))}
        self.controller.apply_decisions([PlaceGroup(name, placement)])
        self.start_all(name)
        self.check()

    def status(self, name: str) -> str:
        return self.controller.group(name).status

    def start_all(self, name: str) -> None:
        """Claims READY (none here) and start every member of a RUNNING group."""
        for member in self.controller.members(name):
            if member.status == "READY":
                self.controller.member_started(f"{name}/{member.name}")

    def finish(self, name: str) -> None:
        self.start_all(name)
        for member in self.controller.members(name):
            if member.spec.kind == "job" and member.status == "RUNNING":
                self.controller.member_succeeded(f"{name}/{member.name}")

    def nodes_of(self, name: str, member: str) -> list[str]:
        state = self.controller.world.member_named(self.controller.group(name), member)
        return [a.node for a in (*state.assignments, *state.held)]
