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

import msgspec

from costart.domain import events as ev
from costart.domain.actors import CHECKED_LOG_BYTES, Actor
from costart.domain.fold import apply_member_event, member_of
from costart.domain.ids import id_text
from costart.domain.spec_types import GroupSpec, MemberSpec
from costart.domain.states import GroupState, MemberState
from costart.domain.world import MEMBER_FOLDS, World
from costart.eventlog.capabilities import Record
from costart.eventlog.codec import event_decoder, gc_paused


def _with_field(cls: type[msgspec.Struct], name: str, kind: Any) -> Any:
    """A struct type that decodes what ``cls`` decodes, its field ``name`` as ``kind``:
    made from ``cls``'s own fields, so it follows every change to them."""
    config = cls.__struct_config__
    fields = [
        (
            f.name,
            kind if f.name == name else f.type,
            msgspec.field(default=f.default, default_factory=f.default_factory),  # type: ignore[call-overload]
        )
        for f in msgspec.structs.fields(cls)
    ]
    return msgspec.defstruct(
        f"{cls.__name__}With{name.title()}Bytes",
        fields,
        kw_only=True,
        tag_field=config.tag_field,
        tag=config.tag,
        gc=False,
    )


_SpecMembersBytes = _with_field(GroupSpec, "members", tuple[msgspec.Raw, ...])
_SubmittedBytes = _with_field(ev.GroupSubmitted, "spec", _SpecMembersBytes)


class _CreatedBytes(msgspec.Struct, frozen=True, gc=False, tag="MemberCreated"):
    """What the fold takes of a `MemberCreated` read from a store that checked its bytes:
    its ids as the text the World keys them by, its spec as bytes (its actor, checked
    when it was written, and its note, which the fold does not keep, skipped)."""

    originator_id: str
    originator_version: int
    group_id: str
    at_ns: int
    spec: msgspec.Raw


class _CheckedCreatedBytes(_CreatedBytes, frozen=True, gc=False, tag="MemberCreated"):
    """The same from a store that did not check them: its actor decoded, so checked as
    the plain decode checks it."""

    actor: Actor | None = None


_MEMBER_SPEC: Final = msgspec.msgpack.Decoder(MemberSpec)
_DECODE_ERRORS: Final = (msgspec.DecodeError, msgspec.ValidationError)

# How a record's event is folded.
_TO_MEMBER, _CREATED, _SUBMITTED, _WORLD = range(4)

_Pending = dict[str, tuple[GroupState, int, msgspec.Raw, str]]
"""Members submitted and not created yet, by their id's text: their group, their index
in it, their spec's bytes and the group's id text."""


def _route(topic: str, trusted: bool) -> tuple[int, msgspec.msgpack.Decoder[Any]]:
    decoder = event_decoder(topic)
    kind = decoder.type
    if kind in MEMBER_FOLDS:
        return _TO_MEMBER, decoder
    if kind is ev.MemberCreated:
        return _CREATED, msgspec.msgpack.Decoder(_CreatedBytes if trusted else _CheckedCreatedBytes)
    if kind is ev.GroupSubmitted:
        return _SUBMITTED, msgspec.msgpack.Decoder(_SubmittedBytes)
    return _WORLD, decoder


def fold_records(world: World, records: Iterable[Record], *, trusted: bool) -> World:
    """``world`` with the event of each record in ``records`` (in position order) folded
    in, its position the last record's. ``trusted``: the store checked each record's
    checksum as it read it, so the actors in the bytes are not checked again (ADR 0089;
    the flag is on for each decode call alone)."""
    apply, groups = world.apply, world.groups
    world.forget_node_use()  # member events go around `apply`: counted afresh when read
    by_number: dict[int, MemberState] = {}
    pending: _Pending = {}
    specs: dict[bytes, MemberSpec] = {}
    routes: dict[str, tuple[int, msgspec.msgpack.Decoder[Any]]] = {}
    checked = CHECKED_LOG_BYTES
    with gc_paused():
        for record in records:
            route = routes.get(record.topic)
            if route is None:
                route = routes[record.topic] = _route(record.topic, trusted)
            how, decoder = route
            checked.on = trusted
            try:
                event = decoder.decode(record.state)
            except _DECODE_ERRORS:
                if how is _TO_MEMBER or how is _WORLD:
                    raise
                how = _WORLD  # not as this fold reads it: the plain decode says why
                event = _decoded(record, trusted)
            finally:
                checked.on = False
            if how is _TO_MEMBER:
                number = event.originator_id.int
                member = by_number.get(number)
                if member is None:  # its first event here (raises for an unknown member)
                    member = by_number[number] = world.member_by_id(event.originator_id)
                apply_member_event(member, event)
            elif how is _CREATED:
                member = _created(world, event, pending)
                if member is None:  # not as its group's submission here said: plainly
                    event = _decoded(record, trusted)
                    apply(event)
                    member = world.member_by_id(event.originator_id)
                by_number[member.id.int] = member
            elif how is _SUBMITTED:
                members = event.spec.members
                event = _submitted(event, specs)
                apply(event)
                key = id_text(event.originator_id)
                group = groups[key]
                for index, member_id in enumerate(group.member_ids):
                    pending[id_text(member_id)] = (group, index, members[index], key)
            else:
                apply(event)
            at_ns = event.at_ns
            if at_ns > world.clock_ns:  # noqa: PLR1730 (no max() call: the hot loop)
                world.clock_ns = at_ns
            world.position = record.id
    return world


def _submitted(event: Any, specs: dict[bytes, MemberSpec]) -> ev.GroupSubmitted:
    """The `GroupSubmitted` of ``event`` (read with its member specs as bytes), each
    member spec decoded once per fold: a spec whose bytes were met before (groups
    submitted from one template) is the spec decoded then, as a restore shares it
    (ADR 0129). Equal bytes decode to equal specs."""
    shared = []
    for raw in event.spec.members:
        data = bytes(raw)
        spec = specs.get(data)
        if spec is None:
            spec = specs[data] = _MEMBER_SPEC.decode(data)
        shared.append(spec)
    spec_fields = msgspec.structs.asdict(event.spec)
    spec_fields["members"] = tuple(shared)
    fields = msgspec.structs.asdict(event)
    fields["spec"] = GroupSpec(**spec_fields)
    return ev.GroupSubmitted(**fields)


def _created(world: World, event: _CreatedBytes, pending: _Pending) -> MemberState | None:
    """The member ``event`` creates, made and kept in ``world``, when its spec's bytes are
    those its group's submission carried for it; else None (folded plainly then)."""
    found = pending.pop(event.originator_id, None)
    if found is None:
        return None
    group, index, spec, group_key = found
    if spec != event.spec or group_key != event.group_id:
        return None
    member = member_of(group, index, event.originator_version)
    world.add_member(event.originator_id, member)
    return member


def _decoded(record: Record, trusted: bool) -> ev.DomainEvent:
    """The record's whole event, decoded as the plain reader decodes it."""
    CHECKED_LOG_BYTES.on = trusted
    try:
        event: ev.DomainEvent = event_decoder(record.topic).decode(record.state)
    finally:
        CHECKED_LOG_BYTES.on = False
    return event
