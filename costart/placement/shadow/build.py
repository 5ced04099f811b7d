"""A `CapacityProfile` from the cluster and the World: pure over (cluster, live groups,
now, free capacity).

Per node: its capacity if it is up (0 if not); a placed or running member's tasks use
their shape from now to the member's expected end (`costart.domain.expected_runtime`:
by its limit, or an estimate; unknown: without end in the plan); an open reservation's
held tasks use theirs without end (they stay held until its gang starts). ``free``, the
allocator's free capacity now, adds what the World does not know about (capacity used by
another scheduler, for instance) as a use without end, so the profile never offers more
than is free now.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from costart.domain import expected_runtime as runtimes
from costart.domain.runtime_history import RuntimeHistory
from costart.domain.states import GroupState, MemberState
from costart.placement.capacity import ZERO, Vec, shape_vec
from costart.placement.cluster import Cluster
from costart.placement.shadow.profile import CapacityProfile, Use

OUTSIDE = ""
"""The owner of uses the World does not know about (no group is named "")."""

Live = Sequence[tuple[GroupState, Sequence[MemberState]]]
EndOf = Callable[[GroupState, MemberState, int], runtimes.ExpectedEnd]
"""When a placed or running member ends, asked at now (`LearnedRuntimes.end`)."""


def world_uses(
    cluster: Cluster,
    live: Live,
    now_ns: int,
    history: RuntimeHistory | None = None,
    end_of: EndOf | None = None,
) -> list[Use]:
    """The uses of the live groups' placements and holds, in the order given
    (``history``: the World's learned runtimes, for members that declare no limit;
    ``end_of``, when given, answers each member's end instead)."""
    index = cluster.index
    out: list[Use] = []
    for group, members in live:
        for member in members:
            vec = shape_vec(member.spec.shape)
            if member.assignments:
                end = (
                    runtimes.expected_end(group, member, now_ns, history)
                    if end_of is None
                    else end_of(group, member, now_ns)
                )
                for a in member.assignments:
                    node = index.get(a.node)
                    if node is not None:
                        out.append(Use(node, vec, now_ns, end.end_ns, group.name, end.basis))
            for a in member.held:
                node = index.get(a.node)
                if node is not None:
                    out.append(Use(node, vec, now_ns, None, group.name))
    return out


def capacity_of(cluster: Cluster) -> list[Vec]:
    """Each node's capacity if it is up, else nothing."""
    return [
        (n.gpu, n.cpu, n.mem_gb) if cluster.is_up(i) else ZERO for i, n in enumerate(cluster.nodes)
    ]


def profile_of(
    cluster: Cluster,
    live: Live,
    now_ns: int,
    free: Sequence[Vec] | None = None,
    history: RuntimeHistory | None = None,
    end_of: EndOf | None = None,
    *,
    capacity: Sequence[Vec] | None = None,
) -> CapacityProfile:
    """The profile of the cluster now: capacity of up nodes, the World's uses (their
    ends from ``history``, or ``end_of``), and (with ``free``) whatever else uses
    capacity now. ``capacity``: `capacity_of` the cluster, when already made."""
    capacity = capacity_of(cluster) if capacity is None else list(capacity)
    profile = CapacityProfile(capacity, now_ns)
    uses = world_uses(cluster, live, now_ns, history, end_of)
    profile.add_all(uses)
    if free is not None:
        for node, cap in enumerate(capacity):
            used = profile.used_at(node, now_ns)
            other = tuple(max(0, cap[d] - free[node][d] - used[d]) for d in range(3))
            if any(other):
                profile.add(Use(node, (other[0], other[1], other[2]), now_ns, None, OUTSIDE))
    return profile
