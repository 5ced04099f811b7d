"""The Group and Member aggregates, and the unit a command works on.

They follow the eventsourcing library's aggregate protocol (``id``, ``version``,
``collect_events()``) with msgspec events instead of the library's dataclass events (ADR
0001). A command works on private copies of the states: if it raises, the copies are
dropped and the live state is untouched. Otherwise the Controller collects the unit's
events, appends them to the log (`costart.log_writer.LogWriter`) and folds them into the
live `World`; the copies are dropped either way. Events get ``originator_version`` =
version + 1 and the injected ``at_ns``; nothing here reads a clock or makes a random id.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, Protocol, TypeVar
from uuid import UUID

import msgspec

from costart.domain import events as ev
from costart.domain.actors import Actor
from costart.domain.errors import NotFound
from costart.domain.fold import apply_group_event, apply_member_event
from costart.domain.states import GroupState, MemberState
from costart.domain.transitions import check_group, check_member

E = TypeVar("E", bound=ev.DomainEvent)


def _copy_group(state: GroupState) -> GroupState:
    return msgspec.structs.replace(state)  # every field is immutable or replaced whole


def _copy_member(state: MemberState) -> MemberState:
    return msgspec.structs.replace(
        state,
        held=list(state.held),
        assignments=list(state.assignments),
        claims=dict(state.claims),
        tasks=list(state.tasks),
    )


class _Recorder:
    """The ordered event list one command produces, shared by the unit's aggregates,
    and the actor who sent the command (stamped on each of its events)."""

    def __init__(self, actor: Actor | None = None) -> None:
        self.events: list[ev.DomainEvent] = []
        self.actor = actor
        self.note: str | None = None  # why, stamped on the events until changed


class _Versioned(Protocol):
    id: UUID
    version: int


S = TypeVar("S", bound=_Versioned)


class _Aggregate(Generic[S]):
    """An aggregate over its state: ``trigger`` checks the transition, builds the next
    event (version + 1, the injected time), folds it and records it. Subclasses name
    the transition check and the fold (class attributes: units make many aggregates)."""

    __slots__ = ("_copy", "_group_id", "_recorder", "state")

    _check: Callable[[S, type[ev.DomainEvent]], None]
    _fold: Callable[[S, ev.DomainEvent], None]

    def __init__(
        self, state: S, recorder: _Recorder, group_id: UUID, copy: Callable[[S], S] | None
    ) -> None:
        """``copy``: how to take a private copy of ``state`` before its first change
        (copy on write: commands mostly change a few of a unit's aggregates); None if
        ``state`` is already private (created by this command)."""
        self.state: S = state
        self._copy = copy
        self._recorder = recorder
        self._group_id = group_id

    @property
    def id(self) -> UUID:
        return self.state.id

    @property
    def version(self) -> int:
        return self.state.version

    def trigger(self, event_type: type[E], at_ns: int, **fields: Any) -> E:
        state = self.state
        self._check(state, event_type)
        if self._copy is not None:
            state = self.state = self._copy(state)
            self._copy = None
        event = event_type(
            originator_id=state.id,
            originator_version=state.version + 1,
            group_id=self._group_id,
            at_ns=at_ns,
            actor=self._recorder.actor,
            note=self._recorder.note,
            **fields,
        )
        self._fold(state, event)
        self._recorder.events.append(event)
        return event


class GroupAggregate(_Aggregate[GroupState]):
    __slots__ = ()
    _check = staticmethod(check_group)
    _fold = staticmethod(apply_group_event)

    def __init__(self, state: GroupState, recorder: _Recorder, *, private: bool) -> None:
        super().__init__(state, recorder, state.id, None if private else _copy_group)


class MemberAggregate(_Aggregate[MemberState]):
    __slots__ = ()
    _check = staticmethod(check_member)
    _fold = staticmethod(apply_member_event)

    def __init__(self, state: MemberState, recorder: _Recorder, *, private: bool) -> None:
        super().__init__(state, recorder, state.group_id, None if private else _copy_member)

    @property
    def name(self) -> str:
        return self.state.spec.name


class GroupUnit:
    """A group aggregate with its member aggregates: the consistency unit of a command.

    ``collect_events()`` (the library's aggregate protocol) returns the events of all its
    aggregates in the order they happened; `Controller._commit` appends them as one
    atomic write, so one command is one append in causal order.
    """

    def __init__(
        self,
        group: GroupState,
        members: list[MemberState],
        *,
        private: bool = False,
        actor: Actor | None = None,
    ) -> None:
        """Over the live states (each copied before its first change), or over states
        this command created (``private``). ``actor``: who sent the command (None:
        costart's own placement step); every event the unit records carries it."""
        self._recorder = _Recorder(actor)
        self._private = private
        self._member_states = members
        self._members: list[MemberAggregate] | None = None
        self.group = GroupAggregate(group, self._recorder, private=private)

    @property
    def members(self) -> list[MemberAggregate]:
        """The member aggregates, in spec order (made on first use: many commands touch
        only the group)."""
        members = self._members
        if members is None:
            private, recorder = self._private, self._recorder
            members = self._members = [
                MemberAggregate(m, recorder, private=private) for m in self._member_states
            ]
        return members

    @classmethod
    def from_events(
        cls, group: GroupState, members: list[MemberState], actor: Actor | None = None
    ) -> GroupUnit:
        """A unit for a group created in this command (states already fresh)."""
        return cls(group, members, private=True, actor=actor)

    @property
    def actor(self) -> Actor | None:
        return self._recorder.actor

    def set_note(self, note: str | None) -> None:
        """Stamp ``note`` (why) on the events recorded from now on."""
        self._recorder.note = note

    @property
    def id(self) -> UUID:
        return self.group.id

    @property
    def version(self) -> int:
        return self.group.version

    @property
    def name(self) -> str:
        return self.group.state.name

    def member(self, name: str) -> MemberAggregate:
        for member in self.members:
            if member.name == name:
                return member
        raise NotFound(f"group {self.name!r} has no member {name!r}")

    def add_events(self, events: list[ev.DomainEvent]) -> None:
        """Record events built outside the aggregates (the submission)."""
        self._recorder.events.extend(events)

    @property
    def pending_events(self) -> list[ev.DomainEvent]:
        return list(self._recorder.events)

    def collect_events(self) -> list[ev.DomainEvent]:
        events, self._recorder.events = self._recorder.events, []
        return events
