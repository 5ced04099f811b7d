"""What the World's live members hold and use, per node, kept current across sessions.

Recounting every live member's holds and placements at the start of every session
dominated small sessions. A member's state changes only by its own events, and each
event bumps its version, so `WorldUsage.sync` compares the live members' versions (and
state objects) with those it counted and recounts only the members that differ, and
takes back what members of groups that left the live set counted. The numbers are integer sums, so
they equal a recount from scratch whatever the order; a different World object (a
restored controller, a test's copy) starts from scratch.
"""

from __future__ import annotations

from collections.abc import Iterable
from itertools import compress
from operator import attrgetter, is_not, ne

from costart.domain.states import GroupState, MemberState
from costart.domain.world import World
from costart.placement.cluster import Cluster

Vec = tuple[int, int, int]
ZERO: Vec = (0, 0, 0)
_VERSION = attrgetter("version")


def wants_single(member: MemberState) -> bool:
    """Would the step place this member alone (DESIGN §5): RESTARTING, or a RUNNING
    replica set below its desired count."""
    return member.status == "RESTARTING" or (
        member.status == "RUNNING"
        and member.spec.kind == "replica-set"
        and len(member.assignments) < member.desired
    )


class _Counted:
    """What one member added: its state object and version when counted, its group's
    name, its shape's vector, the nodes it holds and the nodes it holds or uses."""

    __slots__ = ("group", "held", "single", "state", "used", "vec", "version")

    def __init__(self, group: str, state: MemberState, cluster: Cluster) -> None:
        index = cluster.index
        shape = state.spec.shape
        self.group = group
        self.state = state
        self.version = state.version
        self.vec: Vec = (shape.gpu, shape.cpu, shape.mem_gb)
        self.held = tuple(index[a.node] for a in state.held if a.node in index)
        placed = tuple(index[a.node] for a in state.assignments if a.node in index)
        self.used = self.held + placed
        self.single = wants_single(state)

    def counts_as(self, other: _Counted) -> bool:
        """Does this entry add exactly what ``other`` added?"""
        return (
            self.used == other.used
            and self.held == other.held
            and self.vec == other.vec
            and self.group == other.group
        )


class WorldUsage:
    """Per node: capacity held or used by live members (``used``), capacity held by
    open reservations (``held_total``), and per group name what it holds (``held_by``,
    node index -> vector, only nodes where it holds a task). ``live`` lists the live
    groups with their members (spec order), in the World's live-name order."""

    def __init__(self, cluster: Cluster) -> None:
        self._cluster = cluster
        self._world: World | None = None
        # Bumped whenever the live list (groups, their objects, their order) or what a
        # live member holds or uses may have changed: equal counts, the same live groups
        # holding and using the same nodes, so the same numbers here.
        self.layout = 0
        self._reset()

    def _reset(self) -> None:
        n = len(self._cluster)
        self._counted: dict[str, _Counted] = {}
        self._versions: dict[str, int] = {}  # member key -> version when counted
        self._states: dict[str, MemberState] = {}  # member key -> state object counted
        self._group_of: dict[str, str] = {}  # member key -> its group's name
        self._member_keys: dict[str, tuple[str, ...]] = {}  # live group key -> member keys
        self._live_keys: list[str] = []
        self._flat: list[str] = []  # live members' keys, group by group
        self._groups: list[GroupState] = []
        self._last_states: list[MemberState] = []  # aligned with ``_flat``
        self._last_versions: list[int] = []
        self._held_tasks: dict[str, dict[int, int]] = {}
        self.used: list[Vec] = [ZERO] * n
        self.held_total: list[Vec] = [ZERO] * n
        self.held_by: dict[str, dict[int, Vec]] = {}
        self.live: list[tuple[GroupState, list[MemberState]]] = []
        self.changed: set[int] = set(range(n))
        self.wanting = 0  # live members that `wants_single`
        self.layout += 1

    def sync(self, world: World) -> set[int]:
        """Bring the numbers up to ``world``; returns (and forgets) the nodes whose
        ``used`` may have changed since the previous sync.

        The common case costs a few C-level passes over the live members: their
        objects and versions are looked up in bulk and compared with the counted ones;
        only differing members are recounted."""
        if world is not self._world:
            self._world = world
            self._reset()
        keys = list(world.live_names.values())
        relisted = keys != self._live_keys
        if relisted:
            self._relist(world, keys)
        groups = list(map(world.groups.__getitem__, keys))
        flat = self._flat
        states = list(map(world.members.__getitem__, flat))
        versions = list(map(_VERSION, states))
        n = len(flat)
        if relisted:  # compare by key
            before_states: Iterable[object] = map(self._states.get, flat)
            before_versions: Iterable[object] = map(self._versions.get, flat)
        else:  # the lists are aligned with the last sync's, and usually equal
            before_states, before_versions = self._last_states, self._last_versions
        if (
            not relisted
            and versions == self._last_versions
            and not any(map(is_not, states, self._last_states))
        ):
            moved: set[int] = set()
            stale: set[int] = set()
        else:
            moved = set(compress(range(n), map(is_not, states, before_states)))
            stale = moved.union(compress(range(n), map(ne, versions, before_versions)))
        self._last_states, self._last_versions = states, versions
        for i in sorted(stale):
            key, state = flat[i], states[i]
            old = self._counted.get(key)
            new = _Counted(self._group_of[key], state, self._cluster)
            self.wanting += new.single - (old is not None and old.single)
            if old is None or not new.counts_as(old):
                if old is not None:
                    self._count(old, -1)
                self._count(new, 1)
                self.layout += 1
            self._counted[key] = new
            self._versions[key] = new.version
            self._states[key] = state
        if relisted or moved or any(map(is_not, groups, self._groups)):
            self.layout += 1
            self._groups = groups
            self.live = []
            at = 0
            for key, group in zip(keys, groups, strict=True):
                size = len(self._member_keys[key])
                self.live.append((group, states[at : at + size]))
                at += size
        changed, self.changed = self.changed, set()
        return changed

    def _relist(self, world: World, keys: list[str]) -> None:
        """The live set changed: list its members, and take back what members of
        groups that are no longer live counted."""
        member_keys: dict[str, tuple[str, ...]] = {}
        flat: list[str] = []
        for key in keys:
            known = self._member_keys.get(key)
            if known is None:
                group = world.groups[key]
                known = tuple(str(member_id) for member_id in group.member_ids)
                for member_key in known:
                    self._group_of[member_key] = group.name
            member_keys[key] = known
            flat.extend(known)
        for gone in sorted(self._counted.keys() - set(flat)):
            entry = self._counted.pop(gone)
            self._count(entry, -1)
            self.wanting -= entry.single
            del self._versions[gone], self._states[gone], self._group_of[gone]
        self._member_keys, self._live_keys, self._flat = member_keys, keys, flat

    def _count(self, entry: _Counted, sign: int) -> None:
        g, c, m = entry.vec
        if sign < 0:
            g, c, m = -g, -c, -m
        used = self.used
        for node in entry.used:
            a = used[node]
            used[node] = (a[0] + g, a[1] + c, a[2] + m)
        self.changed.update(entry.used)
        if not entry.held:
            return
        held_total = self.held_total
        tasks = self._held_tasks.setdefault(entry.group, {})
        by_node = self.held_by.setdefault(entry.group, {})
        for node in entry.held:
            a = held_total[node]
            held_total[node] = (a[0] + g, a[1] + c, a[2] + m)
            count = tasks.get(node, 0) + sign
            if count:
                tasks[node] = count
                b = by_node.get(node, ZERO)
                by_node[node] = (b[0] + g, b[1] + c, b[2] + m)
            else:
                del tasks[node]
                del by_node[node]
        if not tasks:
            del self._held_tasks[entry.group]
            del self.held_by[entry.group]
