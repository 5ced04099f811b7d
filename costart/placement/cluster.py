"""The cluster as the placement step sees it: nodes, their capacity, and a topology.

A node sits on a topology path with one domain name per configured level (for example
zone/block/rack); the node itself is always the innermost level, ``node``. A domain is
identified by its path prefix joined with ``/`` (``z1/b3/r2``), so names only need to be
unique under their parent. Node order is fixed at construction (sorted by path, then
name) and every iteration in placement follows it, so no decision depends on hash order.

Node status is the one mutable part: ``up`` nodes take new work; ``drained`` nodes keep
what they run but take nothing new; ``down`` nodes take nothing and their holds are
given back by the step.
"""

from __future__ import annotations

import sys
from bisect import bisect_right
from collections.abc import Iterable, Mapping, Sequence
from typing import Final, Literal

import msgspec

from costart.domain.capacity import Capacity
from costart.domain.spec_types import Shape

NodeStatus = Literal["up", "down", "drained"]
NODE_STATUSES: Final = ("up", "down", "drained")
NODE_LEVEL: Final = "node"


class Node(msgspec.Struct, frozen=True, gc=False):
    """One machine. ``path`` has one domain name per cluster level (outermost first)."""

    name: str
    path: tuple[str, ...]
    gpu: int = 0
    cpu: int = 0
    mem_gb: int = 0
    gpu_type: str | None = None
    labels: tuple[tuple[str, str], ...] = ()

    @property
    def capacity(self) -> Capacity:
        return Capacity(gpu=self.gpu, cpu=self.cpu, mem_gb=self.mem_gb)


class ClusterError(ValueError):
    """A cluster definition is invalid. ``path`` names the field (``nodes[3].gpu``)."""

    def __init__(self, path: str, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(f"{path}: {reason}" if path else reason)


def shape_fits_type(shape: Shape, node: Node) -> bool:
    """A shape asking for a GPU type only fits nodes of that type."""
    return shape.gpu_type is None or shape.gpu_type == node.gpu_type


class Cluster:
    """Nodes in a fixed order, their topology domains, and their status.

    ``levels`` are the configured topology levels (outermost first); ``node`` is implied
    as the innermost one. Domain lookups are precomputed once.
    """

    def __init__(self, levels: Sequence[str], nodes: Iterable[Node]) -> None:
        self.levels: tuple[str, ...] = tuple(levels)
        if NODE_LEVEL in self.levels:
            raise ClusterError("levels", f"{NODE_LEVEL!r} is implied as the innermost level")
        if len(set(self.levels)) != len(self.levels):
            raise ClusterError("levels", "a level is listed twice")
        ordered = sorted(nodes, key=lambda n: (n.path, n.name))
        self.nodes: tuple[Node, ...] = tuple(ordered)
        self.index: dict[str, int] = {}
        for i, node in enumerate(self.nodes):
            if node.name in self.index:
                raise ClusterError(f"nodes[{node.name}]", f"duplicate node name {node.name!r}")
            if len(node.path) != len(self.levels):
                raise ClusterError(
                    f"nodes[{node.name}].path",
                    f"has {len(node.path)} names; levels are {list(self.levels)}",
                )
            # Interned, as the World's use interns the names it keeps (`NodeUse`): a
            # reader looking those names up here then matches on identity, never
            # reading the string itself, a cache miss a node on a large cluster.
            self.index[sys.intern(node.name)] = i
        self.status: list[NodeStatus] = ["up"] * len(self.nodes)
        self._status_now: tuple[NodeStatus, ...] | None = tuple(self.status)  # `status_now`
        # The largest capacity of any node in each dimension (gpu, cpu, mem_gb): no
        # node's free, held or eventual capacity passes it, so neither does any count of
        # tasks that fit one node (what keeps a ledger's counts within a byte).
        self.largest: tuple[int, int, int] = (
            max((node.gpu for node in self.nodes), default=0),
            max((node.cpu for node in self.nodes), default=0),
            max((node.mem_gb for node in self.nodes), default=0),
        )
        self._closed: set[str] = set()  # names of the nodes not up (kept by `set_status`)
        # domain id per (level position, node index); the node level uses the node name.
        self._domain_of: dict[str, list[str]] = {}
        self._members: dict[str, dict[str, list[int]]] = {}
        # Sorted by path, every domain is one contiguous run of node indexes: the planner
        # works on index ranges and slices instead of node lists.
        self._spans: dict[str, dict[str, tuple[int, int]]] = {}
        self._runs: dict[str, list[tuple[str, int, int]]] = {}
        self._run_starts: dict[str, list[int]] = {}
        self._gpu_type_masks: dict[str, list[bool]] = {}
        for depth, level in enumerate((*self.levels, NODE_LEVEL)):
            ids = [self._domain_id(node, depth) for node in self.nodes]
            self._domain_of[level] = ids
            groups: dict[str, list[int]] = {}
            for i, domain in enumerate(ids):
                groups.setdefault(domain, []).append(i)
            self._members[level] = groups
            runs = []
            for domain, indexes in groups.items():
                if indexes[-1] - indexes[0] + 1 != len(indexes):
                    raise ClusterError(
                        "nodes", f"domain {domain!r} is ambiguous (a name contains '/')"
                    )
                runs.append((domain, indexes[0], indexes[-1] + 1))
            self._spans[level] = {domain: (start, end) for domain, start, end in runs}
            self._runs[level] = runs
            self._run_starts[level] = [start for _, start, _ in runs]

    def _domain_id(self, node: Node, depth: int) -> str:
        if depth == len(self.levels):
            return "/".join((*node.path, node.name))
        return "/".join(node.path[: depth + 1])

    # --- topology --------------------------------------------------------------------

    def has_level(self, level: str) -> bool:
        return level in self._members

    def all_levels(self) -> tuple[str, ...]:
        return (*self.levels, NODE_LEVEL)

    def depth(self, level: str) -> int:
        return self.all_levels().index(level)

    def domain_of(self, level: str, node: int) -> str:
        """The id of the domain at ``level`` that holds node ``node`` (by index)."""
        return self._domain_of[level][node]

    def domain_ids(self, level: str) -> list[str]:
        """Domain id at ``level`` per node index (read-only)."""
        return self._domain_of[level]

    def domains(self, level: str) -> list[str]:
        """Every domain id at ``level``, in node order (stable)."""
        return list(self._members[level])

    def span(self, level: str, domain: str) -> tuple[int, int]:
        """The node index range ``[start, end)`` of one domain (empty if unknown)."""
        return self._spans[level].get(domain, (0, 0))

    def runs_within(self, level: str, start: int, end: int) -> list[tuple[str, int, int]]:
        """The domains of ``level`` that have nodes in ``[start, end)``, in node order,
        each with its node range clipped to ``[start, end)`` (read-only)."""
        runs = self._runs[level]
        if start <= 0 and end >= len(self.nodes):
            return runs  # the whole cluster: every domain, unclipped (asked per plan)
        first = max(0, bisect_right(self._run_starts[level], start) - 1)
        out = []
        for domain, s, e in runs[first:]:
            if s >= end:
                break
            if e > start:
                out.append((domain, max(s, start), min(e, end)))
        return out

    def gpu_type_mask(self, gpu_type: str) -> list[bool]:
        """Per node index: is the node of this GPU type? (cached; read-only)"""
        mask = self._gpu_type_masks.get(gpu_type)
        if mask is None:
            mask = [node.gpu_type == gpu_type for node in self.nodes]
            self._gpu_type_masks[gpu_type] = mask
        return mask

    # --- status ----------------------------------------------------------------------

    def set_status(self, node: str, status: NodeStatus) -> None:
        """Mark a node up, drained or down (the controller's report of the machine)."""
        if status not in NODE_STATUSES:
            raise ClusterError(f"nodes[{node}].status", f"unknown status {status!r}")
        try:
            self.status[self.index[node]] = status
        except KeyError:
            raise ClusterError(f"nodes[{node}]", "unknown node") from None
        self._status_now = None
        if status == "up":
            self._closed.discard(node)
        else:
            self._closed.add(node)

    def sync_status(self, reported: Mapping[str, str]) -> None:
        """Take node statuses from the log (`World.node_status`: absent means up).
        Only nodes reported, or not up now, can change: the rest is not visited."""
        if not reported and not self._closed:
            return  # every node up, as reported
        for name in sorted({*reported, *self._closed}):
            index = self.index.get(name)
            if index is None:
                continue  # reported for a node this cluster does not have
            status = reported.get(name, "up")
            if self.status[index] != status:
                self.set_status(name, status)  # type: ignore[arg-type]

    def status_now(self) -> tuple[NodeStatus, ...]:
        """``status`` as a tuple: one object for as long as no status changes (made
        again after `set_status`), so a reader that keeps the status of a session
        compares and keeps it without a copy of every node's each session. ``status``
        changes only through `set_status`."""
        now = self._status_now
        if now is None:
            now = self._status_now = tuple(self.status)
        return now

    def is_up(self, node: int) -> bool:
        return self.status[node] == "up"

    def capacities(self, *, include_down: bool = True) -> dict[str, Capacity]:
        """Capacity per node name (what `check_world` takes)."""
        return {
            n.name: n.capacity
            for i, n in enumerate(self.nodes)
            if include_down or self.status[i] != "down"
        }

    def gpu_types(self) -> list[str]:
        return sorted({n.gpu_type for n in self.nodes if n.gpu_type is not None})

    def __len__(self) -> int:
        return len(self.nodes)
