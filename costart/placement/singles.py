"""Members placed alone after the start (docs/design.md §5): never as a gang.

* A RESTARTING member is re-placed whole: a job's every task, a replica set's
  ``min_start`` (plus more replicas up to desired when they fit), in one `PlaceMember`.
* A RUNNING replica set below its desired count (scale-up, or replicas lost) gets as many
  single replicas as fit now; the rest wait for the next session.

Both keep the member's own constraints and the group's and placement groups' scopes,
anchored to where the group's other members already run.
"""

from __future__ import annotations

from collections.abc import Sequence

from costart.domain import decisions as dec
from costart.domain.spec_types import Topology
from costart.domain.states import GroupState, MemberState
from costart.domain.world import World
from costart.placement.capacity import shape_vec
from costart.placement.cluster import Cluster
from costart.placement.constraints import Scope, resolve_scopes
from costart.placement.gangs import new_assignments
from costart.placement.holdings import wants_single
from costart.placement.ledger import SessionLedger
from costart.placement.planner import Demand, Plan, plan_gang


def _running_nodes(cluster: Cluster, members: Sequence[MemberState]) -> dict[str, list[int]]:
    return {
        m.name: [cluster.index[a.node] for a in m.assignments if a.node in cluster.index]
        for m in members
    }


def _own_scopes(scopes: Sequence[Scope], member: str) -> list[Scope]:
    """The scopes over ``member``, narrowed to it (the others are already placed and
    anchor the scope instead)."""
    return [
        Scope((member,), s.level, s.policy, s.required, s.source, s.anchor, s.avoid)
        for s in scopes
        if member in s.members
    ]


def wanting_singles(members: Sequence[MemberState]) -> list[MemberState]:
    """The members of a started group to place alone (`wants_single`)."""
    return [m for m in members if wants_single(m)]


def place_singles(
    group: GroupState,
    members: Sequence[MemberState],
    world: World,
    cluster: Cluster,
    ledger: SessionLedger,
    placement_groups: dict[str, Topology],
) -> list[dec.Decision]:
    """`PlaceMember` decisions for one started group (``members``: its members in spec
    order)."""
    wanting = wanting_singles(members)
    if not wanting:
        return []
    placed = _running_nodes(cluster, members)
    scopes = resolve_scopes(group.spec, cluster, placement_groups, world, group, placed)
    decisions: list[dec.Decision] = []
    for member in wanting:
        if member.status == "RESTARTING":
            need = member.spec.count if member.spec.kind == "job" else member.spec.min_start
            extra = max(0, member.desired - need)
        else:
            need, extra = 1, member.desired - len(member.assignments) - 1
        demand = Demand(member.name, member.spec.shape, need, extra=extra)
        view = ledger.now_view(None)
        plan = plan_gang(cluster, [demand], _own_scopes(scopes, member.name), view)
        if not isinstance(plan, Plan):
            continue  # waits for capacity; a started group carries no pend reason
        nodes = plan.nodes[member.name]
        vec = shape_vec(member.spec.shape)
        for node in nodes:
            ledger.take(node, vec)
        assignments = new_assignments(cluster, nodes, member.assignments)
        decisions.append(dec.PlaceMember(group.name, member.name, assignments))
    return decisions
