"""The whole controller state: every group and member, folded from the event stream.

`World.apply` is the single fold used live and by replay. Iteration helpers always sort
(by submission order), never rely on dict or set hash order.

`World.apply` is also the only thing that changes a World's groups and members (restore
and replay build a new World), so it can tell readers what it changed: a World's
`ChangeJournal`, started by the first `World.changes` call, lists the keys of the groups
and members each event changed (a pend reason change aside). A reader that kept up reads only those; one that fell
behind the journal's bound, or holds another World, compares the whole state.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import ClassVar, cast
from uuid import UUID

import msgspec

from costart.domain import events as ev
from costart.domain.errors import DomainError, NotFound
from costart.domain.ids import ID_TEXTS, id_text
from costart.domain.projector import (
    apply_group_event,
    apply_member_event,
    new_group,
    new_member,
)
from costart.domain.states import GROUP_TERMINAL, GroupState, MemberState

_SUBMITTED, _CREATED, _NODE, _GROUP, _MEMBER = range(5)
_KIND_OF: dict[type[ev.DomainEvent], int] = {
    ev.GroupSubmitted: _SUBMITTED,
    ev.MemberCreated: _CREATED,
    ev.NodeStatusChanged: _NODE,
    **dict.fromkeys(ev.GROUP_EVENTS, _GROUP),
    **dict.fromkeys(ev.MEMBER_EVENTS, _MEMBER),
}
_KIND_OF[ev.GroupSubmitted] = _SUBMITTED
_KIND_OF[ev.MemberCreated] = _CREATED

_REASON = ev.PendReasonChanged  # changes only `pend_reason` and `version`: not journaled
JOURNAL_LIMIT = 4096  # entries kept beyond a trim; a reader further behind compares all


class ChangeJournal:
    """The keys of the groups and members `World.apply` changed, in order, and a count
    of the changes of the live set (``live_names``).

    A pend reason change is not listed: it changes only the group's ``pend_reason``
    and ``version``, which its readers (the placement step, whose output the reason
    is) never read; a group changed by nothing else is unchanged to them.

    Positions are absolute: entry ``p`` is ``keys[p - base]``. The oldest entries are
    dropped once there are more than twice `JOURNAL_LIMIT`, so `since` may answer None
    (unavailable), never a list that misses a change."""

    __slots__ = ("base", "keys", "relists")

    def __init__(self) -> None:
        self.base = 0
        self.keys: list[str] = []
        self.relists = 0

    @property
    def end(self) -> int:
        """The position after the last entry: a reader's mark once it has read all."""
        return self.base + len(self.keys)

    def since(self, mark: int) -> list[str] | None:
        """The keys changed after ``mark`` (repeats possible), or None if some were
        dropped."""
        if mark < self.base:
            return None
        return self.keys[mark - self.base :]

    def trim(self, keep: int) -> None:
        """Drop all but the newest ``keep`` entries."""
        drop = max(len(self.keys) - keep, 0)
        del self.keys[:drop]
        self.base += drop


class World(msgspec.Struct, kw_only=True, dict=True):
    """Field-complete controller state. ``position`` is the last folded log position.

    ``dict=True`` only to hold the change journal, which is not a field: it is neither
    encoded nor compared, and a copy of a World has none. (msgspec cannot have an
    instance dict without cyclic-GC tracking: one tracked object.)"""

    # The journal, once started (in the instance's dict; None until `changes`).
    _changes: ClassVar[ChangeJournal | None] = None

    # Keyed by the id's canonical text: canonical encoding sorts keys, and msgspec sorts
    # only string keys.
    groups: dict[str, GroupState] = msgspec.field(default_factory=dict)
    members: dict[str, MemberState] = msgspec.field(default_factory=dict)
    live_names: dict[str, str] = msgspec.field(default_factory=dict)
    # Nodes reported drained or down (absent: up), and the cluster stream's version.
    node_status: dict[str, str] = msgspec.field(default_factory=dict)
    cluster_version: int = 0
    submissions: int = 0
    clock_ns: int = 0
    position: int = 0

    def apply(self, event: ev.DomainEvent) -> None:
        """Fold one event. Raises `DomainError` if the event breaks the state machine.
        Once the change journal is started (`changes`), the event is noted in it."""
        changes = self._changes
        if changes is None:
            self.apply_unjournaled(event)
            return
        if type(event) is not _REASON and _KIND_OF.get(type(event), _MEMBER) is not _NODE:
            # Noted before the fold: if it raises, an entry too many is harmless.
            oid = event.originator_id
            changes.keys.append(ID_TEXTS.get(oid.int) or id_text(oid))
            if len(changes.keys) > 2 * JOURNAL_LIMIT:
                changes.trim(JOURNAL_LIMIT)
        live = len(self.live_names)
        self.apply_unjournaled(event)
        if len(self.live_names) != live:  # one event adds or ends at most one group
            changes.relists += 1

    def apply_unjournaled(self, event: ev.DomainEvent) -> None:
        """`apply` without the journal: replay's fold, before any journal can have been
        started (see `journal_started`), skips looking for one on every event."""
        kind = _KIND_OF.get(type(event), _MEMBER)
        # Replay's hot path: the common kinds first, lookups inlined.
        oid = event.originator_id
        key = ID_TEXTS.get(oid.int) or id_text(oid)
        if kind is _MEMBER:
            member = self.members.get(key)
            if member is None:
                raise DomainError(f"unknown member {oid}")
            apply_member_event(member, event)
        elif kind is _GROUP:
            group = self.groups.get(key)
            if group is None:
                raise DomainError(f"unknown group {oid}")
            apply_group_event(group, event)
            if group.status in GROUP_TERMINAL:
                self.live_names.pop(group.name, None)
        elif kind is _SUBMITTED:
            self._submitted(key, cast(ev.GroupSubmitted, event))
        elif kind is _CREATED:
            if key in self.members:
                raise DomainError(f"member {key} created twice")
            created = cast(ev.MemberCreated, event)
            self.members[key] = new_member(created, self.group_by_id(created.group_id))
        else:
            self._node_reported(cast(ev.NodeStatusChanged, event))
        self.clock_ns = max(self.clock_ns, event.at_ns)

    def journal_started(self) -> bool:
        """Has `changes` been called on this World (so `apply` must note events)?"""
        return self._changes is not None

    def changes(self) -> ChangeJournal:
        """This World's change journal, started on the first call: it lists the changes
        `apply` makes from then on."""
        changes = self._changes
        if changes is None:
            changes = self.__dict__["_changes"] = ChangeJournal()
        return changes

    def _submitted(self, key: str, event: ev.GroupSubmitted) -> None:
        if key in self.groups:
            raise DomainError(f"group {key} submitted twice")
        group = new_group(event)
        self.groups[key] = group
        self.live_names[group.name] = key
        self.submissions = max(self.submissions, event.submission_seq)

    def _node_reported(self, event: ev.NodeStatusChanged) -> None:
        if event.originator_version != self.cluster_version + 1:
            raise DomainError(
                f"cluster event version {event.originator_version}; expected {self.cluster_version + 1}"
            )
        self.cluster_version = event.originator_version
        if event.status == "up":
            self.node_status.pop(event.node, None)
        else:
            self.node_status[event.node] = event.status

    def apply_all(self, events: Iterable[ev.DomainEvent]) -> None:
        for event in events:
            self.apply(event)

    def group_by_id(self, group_id: UUID) -> GroupState:
        try:
            return self.groups[id_text(group_id)]
        except KeyError:
            raise DomainError(f"unknown group {group_id}") from None

    def member_by_id(self, member_id: UUID) -> MemberState:
        try:
            return self.members[id_text(member_id)]
        except KeyError:
            raise DomainError(f"unknown member {member_id}") from None

    def group_named(self, name: str) -> GroupState:
        """The live group of that name; else the most recent ended one."""
        group_id = self.live_names.get(name)
        if group_id is not None:
            return self.groups[group_id]
        ended = [g for g in self.groups.values() if g.name == name]
        if not ended:
            raise NotFound(f"no group named {name!r}")
        return max(ended, key=lambda g: g.submission_seq)

    def members_of(self, group: GroupState) -> list[MemberState]:
        """The group's members in spec order."""
        members, texts = self.members, ID_TEXTS
        return [members[texts.get(i.int) or id_text(i)] for i in group.member_ids]

    def member_named(self, group: GroupState, member: str) -> MemberState:
        for state in self.members_of(group):
            if state.name == member:
                return state
        raise NotFound(f"group {group.name!r} has no member {member!r}")

    def groups_in_order(self) -> Iterator[GroupState]:
        """All groups in submission order (stable, hash-independent)."""
        return iter(sorted(self.groups.values(), key=lambda g: g.submission_seq))

    def live_groups(self) -> list[GroupState]:
        return sorted(
            (self.groups[i] for i in self.live_names.values()), key=lambda g: g.submission_seq
        )
