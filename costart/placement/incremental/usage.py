"""What the World's live members hold, per node and per group, and the live list, kept
current across sessions for the step (`costart.placement.holdings.Usage` counts the
same from scratch; what they use, for the allocators, `UsedCount` keeps).

Recounting every live member's holds and placements at the start of every session
dominated small sessions. A member's state changes only by its own events, each of
which the Controller hands to the step once committed, and the step notes in its
`EventJournal`; so `WorldUsage.sync` recounts only the journaled live members whose
object or version differs from what it counted, and looks up only the groups the
journal names as having come into the live set or left it (taking back what members of
groups that left counted; ADR 0057). When the journal cannot vouch for the World (the
first sync of a World, a World whose folds were not all handed over, or a reader
behind the journal's bounds), or the live groups it lists are not as many as the
World's, it compares every live member. The numbers are integer sums, so they equal a recount from scratch
whatever the order; members are recounted in live-list order either way, so per-group
dicts are filled in the same order; a different World object (a restored controller, a
test's copy) starts from scratch.
"""

from __future__ import annotations

from itertools import compress
from operator import attrgetter, is_not, ne

from costart.domain.events import Assignment
from costart.domain.ids import id_text
from costart.domain.states import MemberState
from costart.domain.world import World
from costart.placement.capacity import ZERO, Vec
from costart.placement.cluster import Cluster
from costart.placement.holdings import LiveEntry, node_indexes, wants_single
from costart.placement.incremental.journal import EventJournal, JournalCursor

_VERSION = attrgetter("version")


class _Counted:
    """What one member added: its state object and version when counted, its group's
    name, its shape's vector and the nodes it holds; and its placements, never counted
    here but compared (`layout` versions them: placement-group scopes read them). A
    copy of the list is cheaper than looking up each task's node."""

    __slots__ = ("group", "held", "placed", "single", "state", "vec", "version")

    def __init__(self, group: str, state: MemberState, cluster: Cluster) -> None:
        shape = state.spec.shape
        self.group = group
        self.state = state
        self.version = state.version
        self.vec: Vec = (shape.gpu, shape.cpu, shape.mem_gb)
        self.held = node_indexes(cluster.index, state.held) if state.held else ()
        self.placed: tuple[Assignment, ...] = tuple(state.assignments)
        self.single = wants_single(state)

    def counts_as(self, other: _Counted) -> bool:
        """Does this entry add exactly what ``other`` added (and place the same)?"""
        return (
            self.placed == other.placed
            and self.held == other.held
            and self.vec == other.vec
            and self.group == other.group
        )


class WorldUsage:
    """Per node: capacity held by open reservations (``held_total``), and per group
    name what it holds (``held_by``, node index -> vector, only nodes where it holds a
    task); how many live members `wants_single` (``wanting``). ``live`` lists the live
    groups with their members (spec order), in the World's live-name order. The step's
    `Holdings`; an allocator, which reads what the live members use, counts it with
    `UsedCount`."""

    def __init__(self, cluster: Cluster, journal: EventJournal) -> None:
        """``journal``: where the committed events are noted (the step's)."""
        self._cluster = cluster
        self._cursor = JournalCursor(journal)
        # Bumped whenever the live list (groups, their objects, their order) or what a
        # live member holds or where it is placed may have changed: equal counts, the
        # same live groups holding and placed on the same nodes, so the same numbers.
        self.layout = 0
        self._reset()

    def _reset(self) -> None:
        n = len(self._cluster)
        self._counted: dict[str, _Counted] = {}
        self._versions: dict[str, int] = {}  # member key -> version when counted
        self._states: dict[str, MemberState] = {}  # member key -> state object counted
        self._group_of: dict[str, str] = {}  # live member key -> its group's name
        # Live member key -> (its group's key, its index in the group): where it is in
        # the live list, the order recounts go in.
        self._slot: dict[str, tuple[str, int]] = {}
        self._member_keys: dict[str, tuple[str, ...]] = {}  # live group key -> member keys
        self._live_keys: list[str] = []
        self._held_tasks: dict[str, dict[int, int]] = {}
        self.held_total: list[Vec] = [ZERO] * n
        self._held_lent = False  # whether `lend_held` handed ``held_total`` out since
        self.held_by: dict[str, dict[int, Vec]] = {}
        self.live: list[LiveEntry] = []
        # How ``live`` was last made, when it is the previous live list (``before``)
        # without the entries of the groups named in ``gone``, with ``added`` appended
        # (kept entries the same objects, in order): (before, gone, added). None when
        # it was made otherwise (rebuilt from the World's objects).
        self.relisted: tuple[list[LiveEntry], frozenset[str], list[LiveEntry]] | None = None
        # The nodes whose holds may have changed since the last sync; None: every node
        # (a fresh count), not a set of them all (a hash per node).
        self.changed: set[int] | None = None
        self.wanting = 0  # live members that `wants_single`
        self.layout += 1

    def lend_held(self) -> list[Vec]:
        """``held_total`` as it stands, for a reader to keep as it is (read-only): the
        usage changes a copy from then on, so the list lent never moves (the carried
        start keeps it instead of a copy of its own: a list of every node kept is
        walked at every collection of its generation, ADR 0159)."""
        self._held_lent = True
        return self.held_total

    def sync(self, world: World) -> set[int] | None:
        """Bring the numbers up to ``world``; returns (and forgets) the nodes whose
        holds may have changed since the previous sync, or None: every node may have
        (the first sync of a World).

        Reads the journal: only the members committed events changed since the last
        sync are compared and recounted, and only the groups whose events may have
        changed the live set are looked up (`EventJournal.live_changes_since`). When
        the journal cannot say (see `EventJournal.since`), every live member is
        compared."""
        new_world, keys, came_or_went = self._cursor.read(world)
        if new_world:
            self._reset()
        if keys is None or came_or_went is None:
            self._compare_all(world)
        elif keys or came_or_went:
            self._compare_changed(world, keys, came_or_went)
        changed, self.changed = self.changed, set()
        return changed

    def _compare_all(self, world: World) -> None:
        """Compare every live member's object and version with those counted (a few
        C-level passes); recount the ones that differ."""
        keys = list(world.live_names.values())
        if keys != self._live_keys:
            member_keys, now = self._member_keys, set(keys)
            # Filtered in list order (each list names a group once): no sort needed.
            gone = [key for key in self._live_keys if key not in now]
            added = [key for key in keys if key not in member_keys]
            self._relist(world, gone, added, keys)
        flat = [member for key in keys for member in self._member_keys[key]]
        states = list(map(world.members.__getitem__, flat))
        versions = map(_VERSION, states)
        moved = set(compress(range(len(flat)), map(is_not, states, map(self._states.get, flat))))
        stale = moved.union(
            compress(range(len(flat)), map(ne, versions, map(self._versions.get, flat)))
        )
        for i in sorted(stale):
            self._recount(flat[i], states[i])
        groups = map(world.groups.__getitem__, keys)
        if moved or any(map(is_not, groups, [group for group, _ in self.live])):
            self._list(world)

    def _compare_changed(self, world: World, keys: list[str], came_or_went: list[str]) -> None:
        """Compare only the journaled members, and the members of the groups that came
        into the live set (``came_or_went``: the groups whose events may have changed
        it)."""
        listed = self._came_or_went(world, came_or_went) if came_or_went else []
        if listed is None:  # the live set is not what the journal says: compare all
            self._compare_all(world)
            return
        group_of = self._group_of
        stale = [key for key in keys if key in group_of]
        if listed:
            stale.extend(listed)
        if len(stale) > 1:
            stale = list(dict.fromkeys(stale))  # a member journaled twice: compared once
        if len(stale) > 1:  # recounted in live-list order, as the whole comparison does
            slot, position = self._slot, self._live_keys.index
            stale.sort(key=lambda k: (position(slot[k][0]), slot[k][1]))
        members, counted_states, versions = world.members, self._states, self._versions
        moved = False
        for key in stale:
            state = members[key]
            before = counted_states.get(key)
            if state is not before:
                moved = moved or before is not None  # a new object for a listed member
            elif state.version == versions[key]:
                continue
            self._recount(key, state)
        # Folding never replaces a group object (a submission is a new key), so
        # unlike `_compare_all` this does not look for one.
        if moved:
            self._list(world)

    def _came_or_went(self, world: World, group_keys: list[str]) -> list[str] | None:
        """Take the groups of ``group_keys`` that left the live set out and list those
        that came in (the World's live list appends a submitted group's name last);
        returns the newly listed members (not yet counted), or None if the live list
        then does not have the World's length (never expected: the caller compares
        everything). Reads only the named groups, not the whole live list."""
        member_keys, groups, live_names = self._member_keys, world.groups, world.live_names
        gone: list[str] = []
        added: list[str] = []
        for key in dict.fromkeys(group_keys):  # in order: a submission comes first
            live = live_names.get(groups[key].name) == key
            if key in member_keys:
                if not live:
                    gone.append(key)
            elif live:
                added.append(key)
        listed = self._relist(world, gone, added, None) if gone or added else []
        return listed if len(self._live_keys) == len(live_names) else None

    def _recount(self, key: str, state: MemberState) -> None:
        """Count ``state`` for member ``key`` instead of what it counted before."""
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

    def _list(self, world: World) -> None:
        """The live list (and so `layout`) anew, from the World's objects."""
        self.layout += 1
        self.relisted = None
        members = world.members
        self.live = [
            (world.groups[key], list(map(members.__getitem__, self._member_keys[key])))
            for key in self._live_keys
        ]

    def _relist(
        self, world: World, gone: list[str], added: list[str], keys: list[str] | None
    ) -> list[str]:
        """The live set changed: the groups ``gone`` left it, ``added`` came in (in
        live-list order), and it now lists ``keys`` (None: the kept groups in order,
        then ``added``). Take back what members of groups no longer live counted, list
        the new groups' members and make the live list (the kept groups' entries, in
        order, then the new ones'). Returns the newly listed members (not yet counted).
        Works per group that came or went (usually one)."""
        member_keys, old_keys = self._member_keys, self._live_keys
        before = self.live
        live, live_keys = list(before), list(old_keys)
        gone_names: list[str] = []
        for key in gone:
            at = live_keys.index(key)
            gone_names.append(live[at][0].name)
            del live[at], live_keys[at]
            for member_key in member_keys.pop(key):
                entry = self._counted.pop(member_key, None)
                if entry is not None:
                    self._count(entry, -1)
                    self.wanting -= entry.single
                    del self._versions[member_key], self._states[member_key]
                del self._group_of[member_key], self._slot[member_key]
        listed: list[str] = []
        members = world.members
        kept = len(live)
        for key in added:
            group = world.groups[key]
            known = member_keys[key] = tuple(map(id_text, group.member_ids))
            for i, member_key in enumerate(known):
                self._group_of[member_key] = group.name
                self._slot[member_key] = (key, i)
            listed.extend(known)
            live_keys.append(key)
            live.append((group, list(map(members.__getitem__, known))))
        if keys is None or live_keys == keys:  # the kept groups in order, new ones last
            self._live_keys = live_keys
            self.live = live
            self.relisted = (before, frozenset(gone_names), live[kept:])
            self.layout += 1
        else:
            self._live_keys = keys
            self._list(world)
        return listed

    def _count(self, entry: _Counted, sign: int) -> None:
        """Add (``sign`` 1) or take back (-1) what ``entry`` holds."""
        if not entry.held:
            return
        g, c, m = entry.vec
        if sign < 0:
            g, c, m = -g, -c, -m
        if self.changed is not None:
            self.changed.update(entry.held)
        held_total = self.held_total
        if self._held_lent:  # (kept by a reader as it stood: changed in a copy)
            held_total = self.held_total = list(held_total)
            self._held_lent = False
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
