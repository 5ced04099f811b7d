"""Test oracles for placement: slow, obviously right counts from scratch that the
incremental machinery is compared with. They live here, not in `costart/`, because no
production path may depend on them."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from itertools import chain

from costart.domain.spec_types import Shape
from costart.domain.world import World
from costart.placement.capacity import CapacityView, Vec
from costart.placement.cluster import Cluster
from costart.placement.constraints import Scope
from costart.placement.planner import Demand, Plan, Shortfall, _Search, plan_with


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


class NodeByNodeSearch(_Search):
    """The gang search as it was before it worked on domains (ADR 0127): a spread
    member lists every node of every domain of its span and looks for each domain's
    first node with room up front, and a layout walks every node of its span. What the
    planner decides must not depend on which of the two searched."""

    def _fitting_order(self, start: int, end: int, shape: Shape) -> Iterator[int]:
        return self._node_order(start, end, shape)

    def _node_order(self, start: int, end: int, shape: Shape) -> Iterator[int]:
        if self.prefer is None:
            return iter(range(start, end))
        now = self.prefer.fits(shape)
        return chain(
            (n for n in range(start, end) if now[n] > 0),
            (n for n in range(start, end) if now[n] <= 0),
        )

    def _spread_out(
        self,
        demand: Demand,
        span: tuple[int, int],
        spreads: list[int],
        missing: int,
        log: list[tuple[int, Vec]],
        chosen: list[int],
    ) -> int:
        lead = self.scopes[spreads[0]]
        by_domain: dict[str, list[int]] = {
            domain: list(self._node_order(s, e, demand.shape))
            for domain, s, e in self.cluster.runs_within(lead.level, *span)
        }
        room = {
            domain: self._first_room(nodes, 0, demand.shape) for domain, nodes in by_domain.items()
        }
        used = self.spread_used.setdefault(spreads[0], {})
        placed = 0
        while placed < missing:
            best: tuple[int, str, int] | None = None
            for domain, at in room.items():
                if at is None:
                    continue
                nodes = by_domain[domain]
                if not self._spread_ok(spreads, nodes[0]):
                    continue
                count = used.get(domain, 0)
                if best is None or (count, domain) < (best[0], best[1]):
                    best = (count, domain, at)
            if best is None:
                break
            _, domain, at = best
            node = by_domain[domain][at]
            self._take(node, demand.shape, 1, log)
            chosen.append(node)
            self._note_spread(spreads, node)
            room[domain] = self._first_room(by_domain[domain], at, demand.shape)
            placed += 1
        return placed


def node_by_node_plan(
    cluster: Cluster,
    demands: Sequence[Demand],
    scopes: Sequence[Scope],
    view: CapacityView,
    prefer: CapacityView | None = None,
) -> Plan | Shortfall:
    """`plan_gang` over `NodeByNodeSearch`."""
    return plan_with(NodeByNodeSearch, cluster, demands, scopes, view, prefer)
