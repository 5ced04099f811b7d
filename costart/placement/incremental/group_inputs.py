"""Each waiting group's scopes and gang demands, kept from session to session
(`costart.placement.inputs.FreshInputs` computes them every time).

A waiting group is visited every session, and what its visit starts from is usually
what it was: its gang demands (`gang_demands`) read only its members' specs, holds
and desired counts, and every change of those is a member event, which bumps the
member's version; its scopes (`resolve_scopes`) read only the group's spec, the
placement-group definitions and, when it names a placement group, what the live
groups' members hold and where they are placed, which `WorldUsage.layout` versions. So
both are kept per group with what they were computed from, and computed again only
when that differs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from operator import attrgetter, is_not

from costart.domain.spec_types import GroupSpec, Topology
from costart.domain.states import GroupState, MemberState
from costart.domain.world import World
from costart.placement.cluster import Cluster
from costart.placement.constraints import Scope, resolve_scopes
from costart.placement.inputs import gang_demands
from costart.placement.planner import Demand

MAX_KEPT = 4096
_VERSION = attrgetter("version")


def _names_a_placement_group(spec: GroupSpec) -> bool:
    return spec.placement.placement_group is not None or any(
        m.placement_group is not None for m in spec.members
    )


class _Demands:
    """One group's gang demands and the member states (and versions) they read."""

    __slots__ = ("fixed", "loose", "members", "versions")

    def __init__(self, members: Sequence[MemberState]) -> None:
        self.members = list(members)
        self.versions = list(map(_VERSION, members))
        self.loose: list[Demand] | None = None
        self.fixed: list[Demand] | None = None

    def holds(self, members: Sequence[MemberState]) -> bool:
        return (
            len(members) == len(self.members)
            and not any(map(is_not, members, self.members))
            and list(map(_VERSION, members)) == self.versions
        )


class KeptInputs:
    """`GroupInputs` kept per waiting group (see the module). `new_session` must
    be called at the start of every session; what it returns is shared: read it,
    never change it."""

    def __init__(self, cluster: Cluster) -> None:
        self._cluster = cluster
        # group name -> (group, its spec, layout read or None, scopes)
        self._scopes: dict[str, tuple[GroupState, GroupSpec, int | None, list[Scope]]] = {}
        self._demands: dict[str, _Demands] = {}
        self._world: World | None = None
        self._definitions: dict[str, Topology] = {}
        self._layout = 0

    def new_session(self, world: World, definitions: Mapping[str, Topology], layout: int) -> None:
        """``layout``: `WorldUsage.layout`, synced to ``world``."""
        if (
            world is not self._world
            or definitions != self._definitions
            or len(self._scopes) + len(self._demands) > MAX_KEPT
        ):
            self._world = world
            self._definitions = dict(definitions)
            self._scopes, self._demands = {}, {}
        self._layout = layout

    def scopes(self, group: GroupState) -> list[Scope]:
        """`resolve_scopes` of the group in this session's World."""
        kept = self._scopes.get(group.name)
        if (
            kept is None
            or kept[0] is not group
            or kept[1] is not group.spec
            or (kept[2] is not None and kept[2] != self._layout)
        ):
            spec = group.spec
            scopes = resolve_scopes(spec, self._cluster, self._definitions, self._world, group)
            layout = self._layout if _names_a_placement_group(spec) else None
            kept = self._scopes[group.name] = (group, spec, layout, scopes)
        return kept[3]

    def demands(
        self, group: GroupState, members: Sequence[MemberState], *, fixed: bool
    ) -> list[Demand]:
        """`gang_demands` of the group's members (in spec order)."""
        kept = self._demands.get(group.name)
        if kept is None or not kept.holds(members):
            kept = self._demands[group.name] = _Demands(members)
        if fixed:
            if kept.fixed is None:
                kept.fixed = gang_demands(members, self._cluster, fixed=True)
            return kept.fixed
        if kept.loose is None:
            kept.loose = gang_demands(members, self._cluster, fixed=False)
        return kept.loose
