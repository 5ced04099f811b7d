"""The whole controller state: every group and member, folded from the event stream.

`World.apply` is the single fold used live and by replay. Iteration helpers always sort
(by submission order), never rely on dict or set hash order. The World carries the
state and, derived from it, the use per node (`NodeUse`, ADR 0148: kept by the folds,
never encoded); a reader that wants to know what else changed (the incremental placement
step) learns it from the committed events it is handed.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Final, cast
from uuid import UUID

import msgspec

from costart.domain import events as ev
from costart.domain.errors import DomainError, NotFound
from costart.domain.fold import (
    apply_group_event,
    apply_member_event,
    new_group,
    new_member,
)
from costart.domain.ids import id_text
from costart.domain.node_use import NodeUse, count_node_use, is_live, member_nodes
from costart.domain.runtime_history import RuntimeHistory, runtime_key
from costart.domain.states import GROUP_TERMINAL, GroupState, MemberState

_SUBMITTED, _CREATED, _NODE, _GROUP, _MEMBER, _SUCCEEDED = range(6)
_KIND_OF: dict[type[ev.DomainEvent], int] = {
    ev.GroupSubmitted: _SUBMITTED,
    ev.MemberCreated: _CREATED,
    ev.NodeStatusChanged: _NODE,
    **dict.fromkeys(ev.GROUP_EVENTS, _GROUP),
    **dict.fromkeys(ev.MEMBER_EVENTS, _MEMBER),
}
_KIND_OF[ev.GroupSubmitted] = _SUBMITTED
_KIND_OF[ev.MemberCreated] = _CREATED
# A member run that succeeded is also a sample of the runtime history (ADR 0111): its own
# kind, so the other member events pay nothing for it.
_KIND_OF[ev.MemberSucceeded] = _SUCCEEDED

# The member event kinds that can move what a member holds or has placed (`NodeUse`).
_MOVES_USE: Final = frozenset(
    {
        ev.MemberHeld,
        ev.HoldLent,
        ev.MemberPlaced,
        ev.MemberReleased,
        ev.MemberFailed,
        ev.MemberRestarted,
        ev.MemberScaled,
        ev.MemberSucceeded,
        ev.MemberStopped,
    }
)

MEMBER_FOLDS: Final[frozenset[type[ev.DomainEvent]]] = frozenset(
    kind for kind, how in _KIND_OF.items() if how == _MEMBER
)
"""The event kinds `World.apply` folds by `apply_member_event` into their member alone
(no other part of the World changes but the clock): a replay may hand them to the
member itself once it has found it."""


class World(msgspec.Struct, kw_only=True, dict=True):
    """Field-complete controller state. ``position`` is the last folded log position.

    Beside its fields it keeps the use per node (`node_use`), derived from them and
    never encoded (ADR 0148)."""

    # Keyed by the id's canonical text: canonical encoding sorts keys, and msgspec sorts
    # only string keys.
    groups: dict[str, GroupState] = msgspec.field(default_factory=dict)
    members: dict[str, MemberState] = msgspec.field(default_factory=dict)
    live_names: dict[str, str] = msgspec.field(default_factory=dict)
    # Nodes reported drained or down (absent: up), and the cluster stream's version.
    node_status: dict[str, str] = msgspec.field(default_factory=dict)
    cluster_version: int = 0
    # Run lengths learned from the runs that succeeded (derived from the events above,
    # never an event of its own): what runtime estimates are made of.
    runtime_history: RuntimeHistory = msgspec.field(default_factory=RuntimeHistory)
    submissions: int = 0
    clock_ns: int = 0
    position: int = 0

    def __post_init__(self) -> None:
        # An empty World keeps its use per node from its first event on; one made with
        # members (decoded, copied) counts it on first read.
        self._node_use: NodeUse | None = None if self.members else NodeUse()

    @property
    def node_use(self) -> NodeUse:
        """Per node name, what the live groups' members hold or have placed: kept by
        `apply`, counted afresh here when the World keeps none."""
        use = self._node_use
        if use is None:
            use = self._node_use = count_node_use(self.groups, self.members, self.live_names)
        return use

    def forget_node_use(self) -> None:
        """For a fold that changes members other than through `apply` (a replay's fast
        path): the use per node is counted afresh on its next read."""
        self._node_use = None

    def apply(self, event: ev.DomainEvent) -> None:
        """Fold one event. Raises `DomainError` if the event breaks the state machine."""
        kind = _KIND_OF.get(type(event), _MEMBER)
        # Replay's hot path: the common kinds first.
        oid = event.originator_id
        key = id_text(oid)
        if kind is _MEMBER:
            member = self.members.get(key)
            if member is None:
                raise DomainError(f"unknown member {oid}")
            if self._node_use is not None and type(event) in _MOVES_USE:
                self._fold_moving_use(member, event)
            else:
                apply_member_event(member, event)
        elif kind is _GROUP:
            group = self.groups.get(key)
            if group is None:
                raise DomainError(f"unknown group {oid}")
            apply_group_event(group, event)
            if group.status in GROUP_TERMINAL:
                left = self.live_names.pop(group.name, None)
                if left is not None and self._node_use is not None:
                    self._node_use.take_members(self._members_of_key(left))
        elif kind is _SUCCEEDED:
            self._succeeded(key, event)
        elif kind is _SUBMITTED:
            self._submitted(key, cast(ev.GroupSubmitted, event))
        elif kind is _CREATED:
            created = cast(ev.MemberCreated, event)
            self.add_member(key, new_member(created, self.group_by_id(created.group_id)))
        else:
            self._node_reported(cast(ev.NodeStatusChanged, event))
        at_ns = event.at_ns
        if at_ns > self.clock_ns:  # noqa: PLR1730 (no max() call: replay's hot path)
            self.clock_ns = at_ns

    def add_member(self, key: str, member: MemberState) -> None:
        """Keep a member just created (its `MemberCreated` checked) under its id's text."""
        if key in self.members:
            raise DomainError(f"member {key} created twice")
        self.members[key] = member

    def _fold_moving_use(self, member: MemberState, event: ev.DomainEvent) -> None:
        """Fold a member event that may move its tasks, and move the use per node."""
        before = member_nodes(member) if member.held or member.assignments else ()
        apply_member_event(member, event)
        use = self._node_use
        if use is None or (not before and not member.held and not member.assignments):
            return  # (nothing held or placed before or after: nothing moved)
        if is_live(member, self.groups, self.live_names):
            use.move_member(member, before)

    def _members_of_key(self, key: str) -> list[MemberState | None]:
        members = self.members
        return [members.get(id_text(i)) for i in self.groups[key].member_ids]

    def _submitted(self, key: str, event: ev.GroupSubmitted) -> None:
        if key in self.groups:
            raise DomainError(f"group {key} submitted twice")
        group = new_group(event)
        self.groups[key] = group
        replaced = self.live_names.get(group.name)
        self.live_names[group.name] = key
        if replaced is not None and self._node_use is not None:
            self._node_use.take_members(self._members_of_key(replaced))
        self.submissions = max(self.submissions, event.submission_seq)

    def _succeeded(self, key: str, event: ev.DomainEvent) -> None:
        """Fold a member's success and learn its run's length."""
        member = self.members.get(key)
        if member is None:
            raise DomainError(f"unknown member {event.originator_id}")
        began = member.started_at_ns
        self._fold_moving_use(member, event)
        if began is not None:
            group = self.group_by_id(member.group_id)
            self.runtime_history.learn(runtime_key(group.spec, member.spec), event.at_ns - began)

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
        members, key_of = self.members, id_text
        return [members[key_of(i)] for i in group.member_ids]

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
