"""What the World's live members hold and use, per node, kept current across sessions.

Recounting every live member's holds and placements at the start of every session
dominated small sessions. A member's state changes only by its own events, and each
event bumps its version, so `WorldUsage.sync` revisits the live members and recounts only
a member whose version (or state object) changed since the last sync, and takes back
what members of groups that left the live set counted. The numbers are integer sums, so
they equal a recount from scratch whatever the order; a different World object (a
restored controller, a test's copy) starts from scratch.
"""

from __future__ import annotations

from costart.domain.states import GroupState, MemberState
from costart.domain.world import World
from costart.placement.cluster import Cluster

Vec = tuple[int, int, int]
ZERO: Vec = (0, 0, 0)


class _Counted:
    """What one member added: its state object and version when counted, its group's
    name, its shape's vector, the nodes it holds and the nodes it holds or uses."""

    __slots__ = ("group", "held", "state", "used", "vec", "version")

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


class WorldUsage:
    """Per node: capacity held or used by live members (``used``), capacity held by
    open reservations (``held_total``), and per group name what it holds (``held_by``,
    node index -> vector, only nodes where it holds a task). ``live`` lists the live
    groups with their members (spec order), in the World's live-name order."""

    def __init__(self, cluster: Cluster) -> None:
        self._cluster = cluster
        self._world: World | None = None
        self._counted: dict[str, _Counted] = {}
        self._member_keys: dict[str, tuple[GroupState, tuple[str, ...]]] = {}
        self._held_tasks: dict[str, dict[int, int]] = {}
        self.used: list[Vec] = []
        self.held_total: list[Vec] = []
        self.held_by: dict[str, dict[int, Vec]] = {}
        self.live: list[tuple[GroupState, list[MemberState]]] = []
        self._reset()

    def _reset(self) -> None:
        n = len(self._cluster)
        self._counted = {}
        self._member_keys = {}
        self._held_tasks = {}
        self.used = [ZERO] * n
        self.held_total = [ZERO] * n
        self.held_by = {}
        self.changed: set[int] = set(range(n))

    def sync(self, world: World) -> set[int]:
        """Bring the numbers up to ``world``; returns (and forgets) the nodes whose
        ``used`` may have changed since the previous sync."""
        if world is not self._world:
            self._world = world
            self._reset()
        members, groups = world.members, world.groups
        before, counted = self._counted, {}
        keys_of: dict[str, tuple[GroupState, tuple[str, ...]]] = {}
        live: list[tuple[GroupState, list[MemberState]]] = []
        for group_key in world.live_names.values():
            group = groups[group_key]
            known = self._member_keys.get(group_key)
            if known is None or known[0] is not group:
                known = (group, tuple(str(member_id) for member_id in group.member_ids))
            keys_of[group_key] = known
            states = [members[key] for key in known[1]]
            live.append((group, states))
            for key, state in zip(known[1], states, strict=True):
                old = before.pop(key, None)
                if old is not None and old.state is state and old.version == state.version:
                    counted[key] = old
                    continue
                if old is not None:
                    self._count(old, -1)
                new = counted[key] = _Counted(group.name, state, self._cluster)
                self._count(new, 1)
        for old in before.values():  # members of groups no longer live
            self._count(old, -1)
        self._counted, self._member_keys, self.live = counted, keys_of, live
        changed, self.changed = self.changed, set()
        return changed

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
