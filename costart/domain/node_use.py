"""Per node: what the live groups' members hold or have placed, kept by the World's folds.

`NodeUse` is derived state beside the `World` (ADR 0148): for each node name, the summed
demand (gpu, cpu, mem_gb) of every task that a member of a live group holds or has
placed there and has not released. `World.apply` moves it as it folds the events that
move a member's held or placed tasks, or a group in or out of the live set; it is never
written into a snapshot or the log (a World decoded, copied or folded around `apply`
counts it afresh on its first read, `count_node_use`). A reader that kept an earlier
reading asks which nodes moved since (`moved_since`) instead of reading it whole.

"Live" is what the placement step counts as live: a group named in ``live_names``.
Iteration is in the order nodes were first used (an insertion order, never a hash
order); readers index it by name and must not rely on that order. A name is kept
interned (`sys.intern`, on its first use): the cluster interns its node names too, so a
reader finds the World's names among the cluster's by identity (ADR 0160).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import ItemsView, Iterable, KeysView, Mapping, ValuesView
from operator import attrgetter
from sys import intern
from typing import Final

from costart.domain.ids import id_text
from costart.domain.states import GroupState, MemberState

Vec = tuple[int, int, int]
ZERO: Final[Vec] = (0, 0, 0)
_NODE = attrgetter("node")
# The list of moved node names is dropped (readers behind it read the use whole) once it
# is longer than this or than twice the nodes in use, so it stays O(nodes in use).
MOVED_KEPT = 4096


def member_nodes(member: MemberState) -> tuple[str, ...]:
    """The node of each task ``member`` holds, then of each it has placed."""
    if member.held:
        return (*map(_NODE, member.held), *map(_NODE, member.assignments))
    return tuple(map(_NODE, member.assignments))


def _vec(member: MemberState) -> Vec:
    shape = member.spec.shape
    return (shape.gpu, shape.cpu, shape.mem_gb)


class NodeUse:
    """Node name -> use (no entry: nothing used), and the names moved, in order."""

    __slots__ = ("_first", "_moved", "_use")

    def __init__(self) -> None:
        self._use: dict[str, Vec] = {}
        self._moved: list[str] = []
        self._first = 0  # the mark of ``_moved[0]``

    def get(self, node: str) -> Vec:
        return self._use.get(node, ZERO)

    def items(self) -> ItemsView[str, Vec]:
        """Every node in use with its use (see the module about the order)."""
        return self._use.items()

    def names(self) -> KeysView[str]:
        """The nodes in use, in the order of `items`."""
        return self._use.keys()

    def vectors(self) -> ValuesView[Vec]:
        """Their use, in the order of `items`."""
        return self._use.values()

    def __len__(self) -> int:
        return len(self._use)

    @property
    def mark(self) -> int:
        """Where the list of moved nodes ends now: what a reader passes `moved_since`."""
        return self._first + len(self._moved)

    def moved_since(self, mark: int) -> list[str] | None:
        """The names of the nodes whose use may have moved since ``mark`` (repeats
        possible), or None: that list is no longer kept (read the use whole)."""
        if mark < self._first or mark > self.mark:
            return None
        return self._moved[mark - self._first :]

    def add(self, vec: Vec, nodes: Iterable[str], times: int = 1) -> None:
        """Add ``times`` × ``vec`` on each of ``nodes`` (a node listed k times: k × that);
        ``times`` -1 takes it away."""
        self.add_counts(vec, Counter(nodes), times)

    def add_counts(self, vec: Vec, counts: Mapping[str, int], times: int = 1) -> None:
        g, c, m = vec[0] * times, vec[1] * times, vec[2] * times
        use, moved = self._use, self._moved
        for node, k in counts.items():
            if not k:
                continue
            a, key = use.get(node), node
            if a is None:
                a, key = ZERO, intern(node)
            total = (a[0] + k * g, a[1] + k * c, a[2] + k * m)
            if total == ZERO:
                del use[key]
            else:
                use[key] = total
            moved.append(key)
        self._bound_moved()

    def _bound_moved(self) -> None:
        moved = self._moved
        if len(moved) > MOVED_KEPT and len(moved) > 2 * len(self._use):
            self._first += len(moved)
            moved.clear()

    def move_member(self, member: MemberState, before: tuple[str, ...]) -> None:
        """``member`` held or placed its tasks on ``before`` and now on its own lists:
        each task's demand taken from its node before and added to its node now, task by
        task (a fold moves a few tasks; a tally per node costs more than it saves)."""
        after = member_nodes(member)
        if after == before:
            return
        g, c, m = _vec(member)
        use, moved = self._use, self._moved
        for nodes, sign in ((before, -1), (after, 1)):
            dg, dc, dm = sign * g, sign * c, sign * m
            for node in nodes:
                a, key = use.get(node), node
                if a is None:
                    a, key = ZERO, intern(node)
                total = (a[0] + dg, a[1] + dc, a[2] + dm)
                if total == ZERO:
                    del use[key]
                else:
                    use[key] = total
            moved.extend(nodes)
        self._bound_moved()

    def take_members(self, members: Iterable[MemberState | None]) -> None:
        """Take out what ``members`` hold or have placed (their group left the live set)."""
        for member in members:
            if member is not None and (member.held or member.assignments):
                self.add(_vec(member), member_nodes(member), -1)

    def as_dict(self) -> dict[str, Vec]:
        """A copy (made in C): a whole reading a reader keeps, or one to compare with a
        recount."""
        return dict(self._use)


def is_live(member: MemberState, groups: Mapping[str, GroupState], live: Mapping[str, str]) -> bool:
    """Whether ``member``'s group is live (named in ``live``, the World's live names)."""
    key = id_text(member.group_id)
    group = groups.get(key)
    return group is not None and live.get(group.name) == key


def count_node_use(
    groups: Mapping[str, GroupState], members: Mapping[str, MemberState], live: Mapping[str, str]
) -> NodeUse:
    """The use per node counted afresh from every live group's members: the plain
    reference a kept `NodeUse` equals, and how a World that kept none starts one."""
    use = NodeUse()
    for key in live.values():
        for member_id in groups[key].member_ids:
            member = members.get(id_text(member_id))
            if member is not None and (member.held or member.assignments):
                use.add(_vec(member), member_nodes(member))
    use._moved.clear()  # a fresh count: nothing moved since it was made
    return use
