"""`UsedCount`: what the World's live members hold or have placed, per node, kept
current from the committed events for an allocator (a `UsageSource`;
`costart.placement.holdings.UsageCount` counts the same from scratch).

An allocator reads only ``used``, a sum: so this keeps no live list, no order and no
holds per group (the step's `WorldUsage` keeps those, from the same journal, on its
own). `sync` recounts the journaled live members whose object or version differs from
what it counted, and learns which groups came into the live set or left it from the
journal's live changes, reading only those groups. When the journal cannot vouch for
the World (the first sync of a World, folds not all handed over, a reader behind the
journal's bounds), or the live groups it counts are not as many as the World's, it
compares every live member instead: slower, never wrong.

A first count (nothing counted yet: a fresh step's first session, or a World it has not
read) counts every live member's tasks at once: per shape, one tally of node names over
every member of that shape (in C), each node then looked up once and its entry set to a
shared multiple of the shape's vector, instead of a lookup per task and an addition per
member and node (ADR 0125).
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Iterable, Mapping, Sequence
from operator import attrgetter
from typing import cast

from costart.domain.ids import id_text
from costart.domain.states import MemberState
from costart.domain.world import World
from costart.placement.capacity import ZERO, Vec
from costart.placement.cluster import Cluster
from costart.placement.incremental.journal import EventJournal, JournalCursor

# What one live member added: its state object and version when counted, its shape's
# vector, and the names of the nodes it holds or has placed tasks on (one per task).
_Entry = tuple[MemberState, int, Vec, tuple[str, ...]]
MANY_TASKS = 64  # from this many tasks, a member's are summed per node before adding
_NODE = attrgetter("node")


class _Multiples(dict[int, Vec]):
    """k -> k times ``vec``, made on first use: equal entries share one tuple."""

    def __init__(self, vec: Vec) -> None:
        super().__init__()
        self.vec = vec

    def __missing__(self, k: int) -> Vec:
        g, c, m = self.vec
        multiple = self[k] = (k * g, k * c, k * m)
        return multiple


def _node_names(state: MemberState) -> tuple[str, ...]:
    """The names of the nodes ``state`` holds tasks on, then those it has placed them on
    (one per task, in task order)."""
    if state.held:
        return (*map(_NODE, state.held), *map(_NODE, state.assignments))
    return tuple(map(_NODE, state.assignments))


def _indexes(
    index: Mapping[str, int], names: Iterable[str], counts: Iterable[int] = ()
) -> tuple[list[int], list[int]]:
    """The cluster index of each name, looked up in C, and the ``counts`` that go with
    them; a node the cluster lacks is left out, with its count."""
    found = list(map(index.get, names))
    if None not in found:
        return cast(list[int], found), list(counts)
    kept = [(i, k) for i, k in zip(found, counts or [0] * len(found), strict=True) if i is not None]
    return [i for i, _ in kept], [k for _, k in kept]


class UsedCount:
    """Per node: capacity held or used by live members (``used``), fed by ``journal``
    (the step's: `IncrementalStep.committed` notes the committed events there)."""

    def __init__(self, cluster: Cluster, journal: EventJournal) -> None:
        self._cluster = cluster
        self._cursor = JournalCursor(journal)
        self._changed: set[int] | None
        self._reset()
        # Made with nothing used anywhere: the first sync reports the nodes it counted
        # on (an allocator starts from empty nodes), not every node.
        self._changed = set()

    def _reset(self) -> None:
        n = len(self._cluster)
        self.used: list[Vec] = [ZERO] * n
        self._counted: dict[str, _Entry] = {}  # live member key -> what it added
        self._members_of: dict[str, tuple[str, ...]] = {}  # live group key -> member keys
        # The nodes whose entry may have changed since the last sync; None: every node
        # (a fresh count), not a set of them all, which would cost a hash per node.
        self._changed = None

    def sync(self, world: World) -> set[int] | None:
        """Bring ``used`` up to ``world``; returns (and forgets) the nodes whose entry
        may have changed since the previous sync (a superset), or None: every node
        may have (a World after another one that had use counted). The first sync
        reports the nodes changed since this count was made, with nothing used."""
        new_world, keys, came_or_went = self._cursor.read(world)
        if new_world and (self._counted or self._members_of):
            self._reset()  # (with nothing counted, every entry is zero already)
        if keys is None or came_or_went is None:
            self._compare_all(world)
        elif came_or_went and not self._came_or_went(world, came_or_went):
            self._compare_all(world)  # the live set is not what the journal says
        elif keys:
            counted, members = self._counted, world.members
            for key in keys:
                entry = counted.get(key)  # None: not a live member (a group, a gone one)
                if entry is not None:
                    state = members[key]
                    if state is not entry[0] or state.version != entry[1]:
                        self._recount(key, state)
        changed, self._changed = self._changed, set()
        return changed

    def _came_or_went(self, world: World, group_keys: list[str]) -> bool:
        """Take out the groups of ``group_keys`` that left the live set and count the
        members of those that came in. Returns whether as many groups are counted as
        the World has live (else the caller compares everything)."""
        members_of, groups, live_names = self._members_of, world.groups, world.live_names
        for key in dict.fromkeys(group_keys):
            live = live_names.get(groups[key].name) == key
            known = members_of.get(key)
            if known is not None and not live:
                del members_of[key]
                for member_key in known:
                    self._uncount(member_key)
            elif known is None and live:
                known = members_of[key] = tuple(map(id_text, groups[key].member_ids))
                members = world.members
                for member_key in known:
                    self._recount(member_key, members[member_key])
        return len(members_of) == len(live_names)

    def _compare_all(self, world: World) -> None:
        """Compare every live member's object and version with those counted; recount
        the ones that differ and take out the members of groups no longer live."""
        groups, members, counted = world.groups, world.members, self._counted
        live = {
            key: self._members_of.get(key) or tuple(map(id_text, groups[key].member_ids))
            for key in world.live_names.values()
        }
        if not counted:  # nothing counted, so every entry is zero: a first count
            self._members_of = live
            self._count_all(world, live.values())
            return
        for key, known in self._members_of.items():
            if key not in live:
                for member_key in known:
                    self._uncount(member_key)
        self._members_of = live
        for known in live.values():
            for member_key in known:
                state, entry = members[member_key], counted.get(member_key)
                if entry is None or state is not entry[0] or state.version != entry[1]:
                    self._recount(member_key, state)

    def _count_all(self, world: World, live: Iterable[Sequence[str]]) -> None:
        """Count the members of ``live`` (member keys per live group) onto entries that
        are all zero, none counted yet: their tasks tallied per node name for each
        shape's vector, each node counted on looked up once (see the module)."""
        members, counted = world.members, self._counted
        tallies: dict[Vec, Counter[str]] = {}
        for known in live:
            for key in known:
                state = members[key]
                shape = state.spec.shape
                vec: Vec = (shape.gpu, shape.cpu, shape.mem_gb)
                names = _node_names(state)
                counted[key] = (state, state.version, vec, names)
                if names:
                    tally = tallies.get(vec)
                    if tally is None:
                        tally = tallies[vec] = Counter()
                    tally.update(names)
        used, index = self.used, self._cluster.index
        first = True
        for vec, tally in tallies.items():  # (the members' order: no hash order)
            nodes, counts = _indexes(index, tally, tally.values())
            multiples = _Multiples(vec)
            if first:  # every entry zero: set, node by node in C
                deque(map(used.__setitem__, nodes, map(multiples.__getitem__, counts)), maxlen=0)
                first = False
            else:  # a node may already count another shape's tasks: added
                for i, k in zip(nodes, counts, strict=True):
                    a, b = used[i], multiples[k]
                    used[i] = (a[0] + b[0], a[1] + b[1], a[2] + b[2])
            if self._changed is not None:
                self._changed.update(nodes)

    def _recount(self, key: str, state: MemberState) -> None:
        """Count ``state`` for member ``key`` instead of what it counted before."""
        shape = state.spec.shape
        vec: Vec = (shape.gpu, shape.cpu, shape.mem_gb)
        names = _node_names(state)
        old = self._counted.get(key)
        if old is None or old[2] != vec or old[3] != names:
            if old is not None:
                self._add(old[2], old[3], -1)
            self._add(vec, names, 1)
        self._counted[key] = (state, state.version, vec, names)

    def _uncount(self, key: str) -> None:
        old = self._counted.pop(key, None)
        if old is not None:
            self._add(old[2], old[3], -1)

    def _add(self, vec: Vec, names: tuple[str, ...], sign: int) -> None:
        if not names:
            return
        nodes, _ = _indexes(self._cluster.index, names)
        g, c, m = vec if sign > 0 else (-vec[0], -vec[1], -vec[2])
        used = self.used
        if len(nodes) < MANY_TASKS:
            for node in nodes:
                a = used[node]
                used[node] = (a[0] + g, a[1] + c, a[2] + m)
        else:  # a big member's tasks share nodes: counted per node first, in C
            for node, k in Counter(nodes).items():
                a = used[node]
                used[node] = (a[0] + k * g, a[1] + k * c, a[2] + k * m)
        if self._changed is not None:
            self._changed.update(nodes)
