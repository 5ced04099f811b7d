"""What a waiting group's visit starts from: its scopes and its gang demands.

`FreshInputs` computes both every time they are asked for (the plain step); the
incremental step keeps them from session to session instead
(`costart.placement.incremental.group_inputs`). Either way they are shared with the
caller: read them, never change them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from costart.domain.spec_types import Topology
from costart.domain.states import GroupState, MemberState
from costart.domain.world import World
from costart.placement.capacity import CapacityView
from costart.placement.cluster import Cluster
from costart.placement.constraints import Scope, resolve_scopes
from costart.placement.planner import Demand, Plan, Shortfall


class PlanGang(Protocol):
    """`costart.placement.planner.plan_gang` over the session's cluster (or a memo of
    it that answers the same)."""

    def __call__(
        self,
        demands: Sequence[Demand],
        scopes: Sequence[Scope],
        view: CapacityView,
        prefer: CapacityView | None = None,
    ) -> Plan | Shortfall: ...


class GroupInputs(Protocol):
    """A waiting group's scopes and gang demands, in one session's World."""

    def scopes(self, group: GroupState) -> list[Scope]:
        """`resolve_scopes` of the group."""

    def demands(
        self, group: GroupState, members: Sequence[MemberState], *, fixed: bool
    ) -> list[Demand]:
        """`gang_demands` of the group's members (in spec order)."""


def gang_demands(members: Sequence[MemberState], cluster: Cluster, *, fixed: bool) -> list[Demand]:
    """Each member's gang part (``min_start``); replicas beyond it are best effort.
    ``fixed``: the nodes of the tasks it holds count first."""
    demands = []
    for order, member in enumerate(members):
        spec = member.spec
        held = tuple(cluster.index[a.node] for a in member.held if a.node in cluster.index)
        demands.append(
            Demand(
                member=spec.name,
                shape=spec.shape,
                need=spec.min_start,
                fixed=held if fixed else (),
                extra=max(0, member.desired - spec.min_start),
                order=order,
            )
        )
    return demands


class FreshInputs:
    """`GroupInputs` computed afresh at every call."""

    def __init__(self, cluster: Cluster, world: World, definitions: Mapping[str, Topology]) -> None:
        self._cluster = cluster
        self._world = world
        self._definitions = definitions

    def scopes(self, group: GroupState) -> list[Scope]:
        return resolve_scopes(group.spec, self._cluster, self._definitions, self._world, group)

    def demands(
        self, group: GroupState, members: Sequence[MemberState], *, fixed: bool
    ) -> list[Demand]:
        return gang_demands(members, self._cluster, fixed=fixed)
