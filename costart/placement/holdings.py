"""What the World's live members hold and use, per node, counted from scratch.

The plain step and the allocators read the World through these counts every session:
``used`` (capacity held or placed by live members, what free capacity is taken from),
``held_total`` and ``held_by`` (what open reservations hold, per node and per group).
The incremental step keeps the same numbers current from the committed events instead
(`costart.placement.incremental.usage`); both must equal a count from scratch.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from operator import attrgetter
from typing import Protocol, runtime_checkable

from costart.domain.events import Assignment
from costart.domain.states import GroupState, MemberState
from costart.domain.world import World
from costart.placement.capacity import ZERO, NodeVecs, Vec
from costart.placement.cluster import Cluster

LiveEntry = tuple[GroupState, list[MemberState]]
_NODE = attrgetter("node")


def node_indexes(index: Mapping[str, int], tasks: Sequence[Assignment]) -> tuple[int, ...]:
    """The cluster index of each task's node, in task order; a task on a node the
    cluster no longer has is left out. Looked up in C, with no Python code per task,
    unless some node is missing."""
    try:
        return tuple(map(index.__getitem__, map(_NODE, tasks)))
    except KeyError:  # a node gone from the cluster: the slower, filtering pass
        return tuple([i for i in map(index.get, map(_NODE, tasks)) if i is not None])


def wants_single(member: MemberState) -> bool:
    """Would the step place this member alone (docs/design.md §5): RESTARTING, or a RUNNING
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
    """The use per node, brought up to a World by `sync`: what the allocators read."""

    def use_of(self, nodes: Iterable[int]) -> Iterator[Vec]:
        """Capacity held or used by live members on each of ``nodes`` (indexes, in their
        order), as of the last `sync`."""

    def sync(self, world: World) -> set[int] | None:
        """Bring ``used`` up to ``world``; the nodes whose entry may have changed since
        the previous sync (a superset), or None: any may have. Before the first sync
        every entry is zero: the first sync's nodes are those changed since then."""


@runtime_checkable
class UsageInUse(UsageSource, Protocol):
    """A `UsageSource` that can also name the nodes in use after a whole reading: the
    in-memory allocator then computes only those (`costart.placement.whole_reading`).
    A source that looked each name's node index up already may offer them too
    (``in_use_nodes()``: in `in_use`'s order, -1 for a name the cluster lacks, as
    `UsedCount` does); the reading then does not look them up again."""

    def in_use(self) -> Mapping[str, Vec] | None:
        """After a `sync` that read the World's use whole: the use by node name of
        every node in use (names the cluster lacks included, to be left out), every
        other node's entry `ZERO`; None after a sync that read only what moved."""


class Usage:
    """`Holdings` and ``used`` of one World, counted from scratch (see the module)."""

    def __init__(self, world: World, cluster: Cluster) -> None:
        self.held_total: list[Vec] = [ZERO] * len(cluster)
        self.held_by: dict[str, NodeVecs] = {}
        self.wanting = 0
        live = [(group, world.members_of(group)) for group in world.live_groups()]
        for group, members in live:
            for member in members:
                self.wanting += wants_single(member)
                if member.held:
                    by_node = self.held_by.setdefault(group.name, {})
                    _add(self.held_total, cluster, member, member.held, by_node)
        self.used = count_used(live, cluster)


def count_used(live: Sequence[LiveEntry], cluster: Cluster) -> list[Vec]:
    """Per node: what the live members hold or have placed (``Usage.used``)."""
    used: list[Vec] = [ZERO] * len(cluster)
    for _, members in live:
        for member in members:
            if member.held or member.assignments:
                _add(used, cluster, member, (*member.held, *member.assignments), None)
    return used


def _add(
    into: list[Vec],
    cluster: Cluster,
    member: MemberState,
    tasks: Sequence[Assignment],
    by_node: NodeVecs | None,
) -> None:
    """Add one vector of ``member``'s shape per task to its node's entry of ``into``
    (and of ``by_node``). Tasks are counted per node first (in C): a member's tasks
    share nodes, and a node gone from the cluster counts against nothing."""
    shape = member.spec.shape
    g, c, m = shape.gpu, shape.cpu, shape.mem_gb
    index = cluster.index
    for name, k in Counter(map(_NODE, tasks)).items():
        node = index.get(name)
        if node is None:
            continue
        u = into[node]
        into[node] = (u[0] + k * g, u[1] + k * c, u[2] + k * m)
        if by_node is not None:
            b = by_node.get(node, ZERO)
            by_node[node] = (b[0] + k * g, b[1] + k * c, b[2] + k * m)


class UsageCount:
    """A `UsageSource` that counts from scratch at every `sync` (the allocators'
    default): nothing kept from one World to the next."""

    def __init__(self, cluster: Cluster) -> None:
        self._cluster = cluster
        self.used: list[Vec] = [ZERO] * len(cluster)

    def use_of(self, nodes: Iterable[int]) -> Iterator[Vec]:
        return map(self.used.__getitem__, nodes)

    def sync(self, world: World) -> set[int] | None:
        live = [(group, world.members_of(group)) for group in world.live_groups()]
        self.used = count_used(live, self._cluster)
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
