"""Replay's fold over a store's records: each record decoded and folded in one loop, and
what the log repeats not decoded twice (ADR 0140).

The plain fold is `restore.fold` over `read_events`: every record decoded into its event
and handed to `World.apply`. This one builds the same World (tests fold logs both ways
and compare the encodings) and is used where a store hands over its records
(`RecorderSource.checked_records`); it does less per record:

- A `MemberCreated` carries a copy of its member's spec, which its group's
  `GroupSubmitted` carried before it. The fold keeps the submission's member specs as
  bytes (`msgspec.Raw`, not decoded again) and decodes a creation with its spec left as
  bytes: equal bytes decode to an equal spec, so the member is made from the group's
  own spec object, as `new_member` does once its check passes. Any other case (bytes
  that differ, a group submitted before this fold began, bytes that do not decode so)
  decodes the whole event and folds it plainly, which checks it and names what is wrong.
- An event `World.apply` would fold into its member alone (`MEMBER_FOLDS`) goes straight
  to the member, found by its id's integer (the World keys members by the id's text)
  once and kept for the member's later events.

Everything else is folded by `World.apply`. The state this keeps (members by number,
member specs as bytes) lives for one call and is dropped with it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final
from uuid import UUID

import msgspec

from costart.domain import events as ev
from costart.domain.actors import CHECKED_LOG_BYTES, Actor
from costart.domain.fold import apply_member_event, member_of
from costart.domain.ids import id_text
from costart.domain.states import GroupState, MemberState
from costart.domain.world import MEMBER_FOLDS, World
from costart.eventlog.capabilities import Record
from costart.eventlog.codec import event_decoder, gc_paused


class _MemberCreatedBytes(msgspec.Struct, frozen=True, gc=False, tag="MemberCreated"):
    """A `MemberCreated` with its spec left as bytes (its actor still decoded, so checked
    as the plain decode checks it; its note, which the fold does not keep, skipped)."""

    originator_id: UUID
    originator_version: int
    group_id: UUID
    at_ns: int
    spec: msgspec.Raw
    actor: Actor | None = None


class _SpecMembers(msgspec.Struct, gc=False):
    members: tuple[msgspec.Raw, ...]


class _SubmittedMembers(msgspec.Struct, gc=False):
    """The member specs of a `GroupSubmitted`, as the bytes the log holds."""

    spec: _SpecMembers


_CREATED_BYTES: Final = msgspec.msgpack.Decoder(_MemberCreatedBytes)
_SUBMITTED_MEMBERS: Final = msgspec.msgpack.Decoder(_SubmittedMembers)
_DECODE_ERRORS: Final = (msgspec.DecodeError, msgspec.ValidationError)

# How a record's event is folded.
_TO_MEMBER, _CREATED, _SUBMITTED, _WORLD = range(4)

_Pending = dict[int, tuple[GroupState, int, msgspec.Raw]]
"""Members submitted and not created yet, by their id's integer: their group, their
index in it and their spec's bytes."""


def _route(topic: str) -> tuple[int, msgspec.msgpack.Decoder[Any]]:
    decoder = event_decoder(topic)
    kind = decoder.type
    if kind in MEMBER_FOLDS:
        return _TO_MEMBER, decoder
    if kind is ev.MemberCreated:
        return _CREATED, _CREATED_BYTES
    return (_SUBMITTED if kind is ev.GroupSubmitted else _WORLD), decoder


def fold_records(world: World, records: Iterable[Record], *, trusted: bool) -> World:
    """``world`` with the event of each record in ``records`` (in position order) folded
    in, its position the last record's. ``trusted``: the store checked each record's
    checksum as it read it, so the actors in the bytes are not checked again (ADR 0089;
    the flag is on for each decode call alone)."""
    apply, members, groups = world.apply, world.members, world.groups
    by_number: dict[int, MemberState] = {}
    pending: _Pending = {}
    routes: dict[str, tuple[int, msgspec.msgpack.Decoder[Any]]] = {}
    checked = CHECKED_LOG_BYTES
    with gc_paused():
        for record in records:
            route = routes.get(record.topic)
            if route is None:
                route = routes[record.topic] = _route(record.topic)
            how, decoder = route
            checked.on = trusted
            try:
                event = decoder.decode(record.state)
            except _DECODE_ERRORS:
                if how is not _CREATED:
                    raise
                event = None  # not a creation this fold reads: the plain decode says why
            finally:
                checked.on = False
            if how is _TO_MEMBER:
                number = event.originator_id.int
                member = by_number.get(number)
                if member is None:  # its first event here (raises for an unknown member)
                    member = by_number[number] = world.member_by_id(event.originator_id)
                apply_member_event(member, event)
            elif how is _CREATED:
                member = None if event is None else _created(world, event, pending)
                if member is None:
                    event = _decoded(record, trusted)
                    apply(event)
                    member = members[id_text(event.originator_id)]
                by_number[event.originator_id.int] = member
            else:
                apply(event)
                if how is _SUBMITTED:
                    _remember(pending, groups[id_text(event.originator_id)], record.state)
            at_ns = event.at_ns
            if at_ns > world.clock_ns:  # noqa: PLR1730 (no max() call: the hot loop)
                world.clock_ns = at_ns
            world.position = record.id
    return world


def _remember(pending: _Pending, group: GroupState, state: bytes) -> None:
    """Keep the member specs of the group just submitted (from ``state``, its bytes)."""
    specs = _SUBMITTED_MEMBERS.decode(state).spec.members
    for index, member_id in enumerate(group.member_ids):
        pending[member_id.int] = (group, index, specs[index])


def _created(world: World, event: _MemberCreatedBytes, pending: _Pending) -> MemberState | None:
    """The member ``event`` creates, made and kept in ``world``, when its spec's bytes are
    those its group's submission carried for it; else None (folded plainly then)."""
    found = pending.pop(event.originator_id.int, None)
    if found is None:
        return None
    group, index, spec = found
    if spec != event.spec or group.id.int != event.group_id.int:
        return None
    member = member_of(group, index, event.originator_version)
    world.add_member(id_text(event.originator_id), member)
    return member


def _decoded(record: Record, trusted: bool) -> ev.DomainEvent:
    """The record's whole event, decoded as the plain reader decodes it."""
    CHECKED_LOG_BYTES.on = trusted
    try:
        event: ev.DomainEvent = event_decoder(record.topic).decode(record.state)
    finally:
        CHECKED_LOG_BYTES.on = False
    return event
