"""The invariant checks after every step, kept proportional to what the step changed.

`check_world` (DESIGN §3.4, with the cluster's capacities) runs after every step that
wrote events, over a view of the World holding the groups the step touched plus every
group with capacity on a node the step touched. That view is exact for what could have
changed: a group no event touched is as it was when it was last checked, and a node's
usage only changes through events of groups on it, so its overcommit check sees every
holder. A full check over every live group runs every `FULL_CHECK_EVERY` steps and at the
end. `EventAudit` sees every written event (in the engine).
"""

from __future__ import annotations

from collections.abc import Mapping

from costart.domain.events import Assignment
from costart.domain.invariants import Capacity, check_world
from costart.domain.states import GroupState, MemberState
from costart.domain.world import World
from costart.sim.ports import key_of

FULL_CHECK_EVERY = 10_000


class _View(World, kw_only=True):
    """A World restricted to some groups, with each group's members looked up once."""

    by_group: dict[int, list[MemberState]]

    def members_of(self, group: GroupState) -> list[MemberState]:
        return self.by_group[id(group)]


class StepChecker:
    """Tracks which nodes each member uses, and checks the touched part of the World."""

    def __init__(self, capacities: Mapping[str, Capacity]) -> None:
        self.capacities = dict(capacities)
        self.checks = 0
        self.full_checks = 0
        self._nodes_of: dict[str, frozenset[str]] = {}
        self._holders: dict[str, dict[str, int]] = {}  # node -> group key -> members there
        self._touched_groups: set[str] = set()
        self._touched_nodes: set[str] = set()

    def member_changed(self, group_key: str, member_key: str, member: MemberState) -> None:
        """Note a member an event touched (its nodes before and after count as touched)."""
        self._touched_groups.add(group_key)
        nodes = _nodes(member.held, member.assignments)
        before = self._nodes_of.get(member_key, frozenset())
        if nodes == before:
            return
        for node in before - nodes:
            holders = self._holders[node]
            holders[group_key] -= 1
            if not holders[group_key]:
                del holders[group_key]
        for node in nodes - before:
            holders = self._holders.setdefault(node, {})
            holders[group_key] = holders.get(group_key, 0) + 1
        self._nodes_of[member_key] = nodes
        self._touched_nodes |= before ^ nodes

    def group_touched(self, group_key: str) -> None:
        self._touched_groups.add(group_key)

    @property
    def pending(self) -> bool:
        return bool(self._touched_groups)

    def check_step(self, world: World) -> None:
        """Check the touched part of ``world``; raises `InvariantViolation`."""
        keys = set(self._touched_groups)
        for node in self._touched_nodes:
            keys.update(self._holders.get(node, ()))
        self._touched_groups.clear()
        self._touched_nodes.clear()
        check_world(_view(world, keys), self.capacities)
        self.checks += 1

    def check_all(self, world: World) -> None:
        """Check every live group (and the groups just touched)."""
        keys = set(world.live_names.values()) | self._touched_groups
        self._touched_groups.clear()
        self._touched_nodes.clear()
        check_world(_view(world, keys), self.capacities)
        self.checks += 1
        self.full_checks += 1


def _nodes(held: list[Assignment], assignments: list[Assignment]) -> frozenset[str]:
    if not held and not assignments:
        return frozenset()
    return frozenset(a.node for a in (*held, *assignments))


def _view(world: World, keys: set[str]) -> World:
    groups = {k: world.groups[k] for k in keys if k in world.groups}
    members = world.members
    by_group = {id(g): [members[key_of(m)] for m in g.member_ids] for g in groups.values()}
    return _View(groups=groups, by_group=by_group)
