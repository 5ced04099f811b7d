"""The invariant checks after every step, kept proportional to what the step changed.

`check_world` (docs/design.md §3.4, with the cluster's capacities) holds after every step: after
a step that wrote events, `StepChecker.check_step` checks

* the group rules (`check_group`) of every group an event touched: a group no event
  touched, with its members, is as it was when it was last checked (an event changes
  only its own aggregate, and every member event also touches the member's group);
* overcommit (#3) on every node whose usage the step changed. What each node holds is
  kept as running totals, moved by the difference whenever an event about a member is
  written (a member's capacity changes only through events about it, and its shape
  never does); a node the step did not change holds what it held when last checked.

So a step raises exactly when `check_world` over the whole World would. When the
incremental check finds a violation, the full check over the live groups runs to raise
it, so the violation names the same rule, group, member and node the full check names.
In a run with the host's other work (``outside``), #3 counts it too: costart's holds and
placements plus the other work never exceed a node's capacity; a node the other work
moved on is checked like one a member event moved (`node_touched`).
A full check over every live group runs every `FULL_CHECK_EVERY` steps and at the end,
and it also recounts every node's totals from the World and compares them with the
running ones. `EventAudit` sees every written event (in the engine).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from operator import attrgetter

from costart.domain.capacity import Capacity
from costart.domain.events import Assignment
from costart.domain.invariants import check_group, check_world
from costart.domain.spec_types import Shape
from costart.domain.states import GroupState, MemberState
from costart.domain.world import World
from costart.sim.errors import SimError
from costart.sim.ports import key_of

FULL_CHECK_EVERY = 10_000
NOTHING = Capacity()

_submission_seq = attrgetter("submission_seq")


class _View(World, kw_only=True):
    """A World restricted to some groups, with each group's members looked up once."""

    by_group: dict[int, list[MemberState]]

    def members_of(self, group: GroupState) -> list[MemberState]:
        return self.by_group[id(group)]


class StepChecker:
    """Keeps what every node holds, and checks the part of the World a step touched."""

    def __init__(
        self,
        capacities: Mapping[str, Capacity],
        outside: Callable[[str], Capacity] | None = None,
    ) -> None:
        """``outside``: what the host's other work uses on a node (None: no such work)."""
        self.capacities = dict(capacities)
        self._outside = outside
        self.checks = 0
        self.full_checks = 0
        # member key -> the node of each task it holds or runs (repeats count)
        self._nodes_of: dict[str, tuple[str, ...]] = {}
        # node -> [tasks there, gpu, cpu, mem_gb] summed over every member
        self._used: dict[str, list[int]] = {}
        self._touched_groups: set[str] = set()
        self._touched_nodes: set[str] = set()

    def member_changed(self, group_key: str, member_key: str, member: MemberState) -> None:
        """Note a member an event touched, and move its nodes' totals by the change."""
        self._touched_groups.add(group_key)
        held = member.held
        assignments = member.assignments
        nodes = _nodes(held, assignments) if held or assignments else ()
        before = self._nodes_of.get(member_key, ())
        if nodes == before:
            return
        _add(self._used, before, -1, member.spec.shape)
        _add(self._used, nodes, 1, member.spec.shape)
        if nodes:
            self._nodes_of[member_key] = nodes
        else:
            del self._nodes_of[member_key]
        self._touched_nodes.update(before)
        self._touched_nodes.update(nodes)

    def group_touched(self, group_key: str) -> None:
        self._touched_groups.add(group_key)

    def node_touched(self, node: str) -> None:
        """The host's other work moved on ``node``."""
        self._touched_nodes.add(node)

    def used_on(self, node: str) -> Capacity:
        """What costart's live members hold and use on ``node`` (the running totals)."""
        totals = self._used.get(node)
        return NOTHING if totals is None else Capacity(totals[1], totals[2], totals[3])

    @property
    def pending(self) -> bool:
        return bool(self._touched_groups or self._touched_nodes)

    def check_step(self, world: World) -> None:
        """Check the touched part of ``world``; raises `InvariantViolation`."""
        groups = world.groups
        touched = [groups[k] for k in self._touched_groups if k in groups]
        if len(touched) > 1:
            touched.sort(key=_submission_seq)  # the full check's order: same first violation
        for group in touched:
            check_group(group, world.members_of(group))
        if any(map(self._over, self._touched_nodes)):
            self._check_live(world)
            self._raise_over(sorted(filter(self._over, self._touched_nodes)))
        self._touched_groups.clear()
        self._touched_nodes.clear()
        self.checks += 1

    def check_all(self, world: World) -> None:
        """Check every live group (and the groups just touched), and recount the nodes."""
        self._check_live(world)
        self._touched_groups.clear()
        self._touched_nodes.clear()
        self.checks += 1
        self.full_checks += 1
        recounted: dict[str, list[int]] = {}
        for group in world.live_groups():
            for member in world.members_of(group):
                if member.held or member.assignments:
                    nodes = _nodes(member.held, member.assignments)
                    _add(recounted, nodes, 1, member.spec.shape)
        if recounted != {node: used for node, used in self._used.items() if used[0]}:
            raise SimError("the nodes' running totals differ from the World's")
        if self._outside is not None:
            self._raise_over([node for node in sorted(self.capacities) if self._over(node)])

    def _over(self, node: str) -> bool:
        tasks, gpu, cpu, mem = self._used.get(node) or (0, 0, 0, 0)
        if self._outside is not None:
            other = self._outside(node)
            if other != NOTHING:
                tasks, gpu, cpu, mem = 1, gpu + other.gpu, cpu + other.cpu, mem + other.mem_gb
        if not tasks:
            return False
        cap = self.capacities.get(node)
        return cap is None or gpu > cap.gpu or cpu > cap.cpu or mem > cap.mem_gb

    def _raise_over(self, nodes: list[str]) -> None:
        """Raise for the first of ``nodes`` (over capacity, the World alone not)."""
        if not nodes:
            return
        if self._outside is None:
            raise SimError("a node's running totals say overcommit; the World says not")
        node = nodes[0]
        ours, other = self.used_on(node), self._outside(node)
        cap = self.capacities.get(node, NOTHING)
        raise SimError(
            f"#3 no overcommit: node {node}: costart holds and uses gpu {ours.gpu} cpu "
            f"{ours.cpu} mem {ours.mem_gb}, the host's other work gpu {other.gpu} cpu "
            f"{other.cpu} mem {other.mem_gb}; capacity gpu {cap.gpu} cpu {cap.cpu} "
            f"mem {cap.mem_gb}"
        )

    def _check_live(self, world: World) -> None:
        keys = set(world.live_names.values()) | self._touched_groups
        check_world(_view(world, keys), self.capacities)


def _nodes(held: list[Assignment], assignments: list[Assignment]) -> tuple[str, ...]:
    return tuple([a.node for a in held] + [a.node for a in assignments])


def _add(used: dict[str, list[int]], nodes: tuple[str, ...], sign: int, shape: Shape) -> None:
    """Add (``sign`` 1) or take away (-1) one task of ``shape`` on each of ``nodes``."""
    gpu, cpu, mem = sign * shape.gpu, sign * shape.cpu, sign * shape.mem_gb
    for node in nodes:
        totals = used.get(node)
        if totals is None:
            totals = used[node] = [0, 0, 0, 0]
        totals[0] += sign
        totals[1] += gpu
        totals[2] += cpu
        totals[3] += mem


def _view(world: World, keys: set[str]) -> World:
    groups = {k: world.groups[k] for k in keys if k in world.groups}
    members = world.members
    by_group = {id(g): [members[key_of(m)] for m in g.member_ids] for g in groups.values()}
    return _View(groups=groups, by_group=by_group)
