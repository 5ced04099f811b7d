"""What the World's live members hold and use, per node, counted from scratch.

The plain step and the allocators read the World through these counts every session:
``used`` (capacity held or placed by live members, what free capacity is taken from),
``held_total`` and ``held_by`` (what open reservations hold, per node and per group).
The incremental step keeps the same numbers current from the committed events instead
(`costart.placement.incremental.usage`); both must equal a count from scratch.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from costart.domain.states import GroupState, MemberState
from costart.domain.world import World
from costart.placement.capacity import ZERO, NodeVecs, Vec
from costart.placement.cluster import Cluster

LiveEntry = tuple[GroupState, list[MemberState]]


def wants_single(member: MemberState) -> bool:
    """Would the step place this member alone (DESIGN §5): RESTARTING, or a RUNNING
    replica set below its desired count."""
    return member.status == "RESTARTING" or (
        member.status == "RUNNING"
        and member.spec.kind == "replica-set"
        and len(member.assignments) < member.desired
    )


class Holdings(Protocol):
    """What a session's ledger starts from, besides free capacity."""

    @property
    def held_total(self) -> Sequence[Vec]:
        """Per node: capacity held by open reservations."""

    @property
    def held_by(self) -> dict[str, NodeVecs]:
        """Per group name: what it holds (node -> vector; only nodes where it holds a
        task)."""

    @property
    def wanting(self) -> int:
        """How many live members `wants_single`."""


class UsageSource(Protocol):
    """``used`` per node, brought up to a World by `sync`: what the allocators read."""

    @property
    def used(self) -> Sequence[Vec]:
        """Per node: capacity held or used by live members, as of the last `sync`."""

    def sync(self, world: World) -> set[int] | None:
        """Bring ``used`` up to ``world``; the nodes whose entry may have changed since
        the previous sync (a superset), or None: any may have."""


class Usage:
    """`Holdings` and ``used`` of one World, counted from scratch (see the module)."""

    def __init__(self, world: World, cluster: Cluster) -> None:
        n, index = len(cluster), cluster.index
        used: list[Vec] = [ZERO] * n
        held_total: list[Vec] = [ZERO] * n
        self.held_by: dict[str, NodeVecs] = {}
        self.wanting = 0
        for group in world.live_groups():
            for member in world.members_of(group):
                self.wanting += wants_single(member)
                shape = member.spec.shape
                g, c, m = shape.gpu, shape.cpu, shape.mem_gb
                for a in member.held:
                    node = index.get(a.node)
                    if node is None:
                        continue  # a node gone from the cluster: nothing to count against
                    h = held_total[node]
                    held_total[node] = (h[0] + g, h[1] + c, h[2] + m)
                    by_node = self.held_by.setdefault(group.name, {})
                    b = by_node.get(node, ZERO)
                    by_node[node] = (b[0] + g, b[1] + c, b[2] + m)
                for a in (*member.held, *member.assignments):
                    node = index.get(a.node)
                    if node is not None:
                        u = used[node]
                        used[node] = (u[0] + g, u[1] + c, u[2] + m)
        self.used = used
        self.held_total = held_total


class UsageCount:
    """A `UsageSource` that counts from scratch at every `sync` (the allocators'
    default): nothing kept from one World to the next."""

    def __init__(self, cluster: Cluster) -> None:
        self._cluster = cluster
        self.used: list[Vec] = [ZERO] * len(cluster)

    def sync(self, world: World) -> set[int] | None:
        self.used = Usage(world, self._cluster).used
        return None


def live_in_order(world: World) -> list[LiveEntry]:
    """The live groups with their members (spec order), in the one global order:
    priority descending, then submission (`costart.placement.step.session_order`)."""
    return in_session_order([(group, world.members_of(group)) for group in world.live_groups()])


def in_session_order(live: Sequence[LiveEntry]) -> list[LiveEntry]:
    """Live groups paired with their members, sorted into the session order (stable)."""
    return sorted(live, key=pair_order_key)


def order_key(group: GroupState) -> tuple[int, int]:
    return (-group.spec.priority, group.submission_seq)


def pair_order_key(pair: LiveEntry) -> tuple[int, int]:
    """`order_key` of a live group paired with its members."""
    return order_key(pair[0])
