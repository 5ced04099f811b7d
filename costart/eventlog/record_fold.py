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
  own spec object, as `new_member` does once its check passes. The submission's member
  ids are read as their text, the keys their creations are met by (ADR 0150: no text
  made from a `UUID`), and turned into UUIDs by one conversion. Any other case (bytes
  that differ, a group submitted before this fold began, bytes that do not decode so)
  decodes the whole event and folds it plainly, which checks it and names what is wrong.
- An event `World.apply` would fold into its member alone (`MEMBER_FOLDS`) is decoded
  as a view of its kind (ADR 0150): a struct of the same name holding the fields the
  member's fold reads, its id as the text the World keys members by (no `UUID` built,
  no text made from one), without its group's id, which the member's fold does not
  read, and without its actor and note, which the state does not keep (from a store
  that did not check the bytes the actor and group id are still decoded, so checked as
  the plain decode checks them). It goes straight to its member.

Everything else is folded by `World.apply`. The state this keeps (member specs by
their bytes) lives for one call and is dropped with it.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from typing import Any, Final, cast
from uuid import UUID

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


def _like(
    cls: type[msgspec.Struct],
    name: str,
    retyped: dict[str, Any],
    skipped: frozenset[str] = frozenset(),
) -> Any:
    """A struct type ``name`` that decodes what ``cls`` decodes, each field in ``retyped``
    read as the type given there and the fields in ``skipped`` not read at all: made from
    ``cls``'s own fields, so it follows every change to them."""
    config = cls.__struct_config__
    fields = [
        (
            f.name,
            retyped.get(f.name, f.type),
            msgspec.field(default=f.default, default_factory=f.default_factory),  # type: ignore[call-overload]
        )
        for f in msgspec.structs.fields(cls)
        if f.name not in skipped
    ]
    return msgspec.defstruct(
        name,
        fields,
        kw_only=True,
        tag_field=config.tag_field,
        tag=config.tag,
        frozen=True,
        gc=False,
    )


def _with_field(cls: type[msgspec.Struct], name: str, kind: Any) -> Any:
    """A struct type that decodes what ``cls`` decodes, its field ``name`` as ``kind``."""
    return _like(cls, f"{cls.__name__}With{name.title()}Bytes", {name: kind})


_NOT_FOLDED: Final = frozenset({"actor", "group_id", "note"})
"""What a member's fold does not read of a member event: `World.apply` finds the member
by the event's own id and folds it by its kind, and the state keeps no actor or note."""


@functools.cache  # a class made per fold (per restore) is left to the collector each time
def _member_view(kind: type[ev.DomainEvent], trusted: bool) -> Any:
    """A view of member events of ``kind``: their id as text, the rest as the member's
    fold reads it; same name as ``kind`` (a failed check names the kind as the plain
    fold names it). ``trusted`` (the store checked the bytes): the fields the fold does
    not read are skipped; else the actor and group id are decoded, so checked as the
    plain decode checks them."""
    skipped = _NOT_FOLDED if trusted else frozenset({"note"})
    return _like(kind, kind.__name__, {"originator_id": str}, skipped)


_SpecMembersBytes = _with_field(GroupSpec, "members", tuple[msgspec.Raw, ...])
# A submission's member ids as their text: the keys its members' creations are met by
# (no text made from a UUID), turned into UUIDs by one conversion (ADR 0150).
_SubmittedBytes = _like(
    ev.GroupSubmitted,
    "GroupSubmittedWithSpecBytes",
    {"spec": _SpecMembersBytes, "member_ids": tuple[str, ...]},
)
_MEMBER_IDS: Final = tuple[UUID, ...]
_ID_TEXT_LENGTH: Final = 36


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


class _Met:
    """What one fold has met of the submissions: member specs by their bytes (each
    decoded once), and the members submitted and not created yet."""

    __slots__ = ("pending", "specs")

    def __init__(self) -> None:
        self.specs: dict[bytes, MemberSpec] = {}
        self.pending: _Pending = {}


_Route = tuple[int, msgspec.msgpack.Decoder[Any], type[ev.DomainEvent]]
"""How a topic's records are folded, the decoder they are read with, and their kind."""


def _route(routes: dict[str, _Route], record: Record, trusted: bool) -> _Route:
    """The route of ``record``'s topic, kept in ``routes``."""
    routes[record.topic] = route = _route_of(record.topic, trusted)
    return route


@functools.cache  # made once per process: each view is a class (see `_member_view`)
def _route_of(topic: str, trusted: bool) -> _Route:
    decoder = event_decoder(topic)
    kind = cast(type[ev.DomainEvent], decoder.type)
    if kind in MEMBER_FOLDS:
        return _TO_MEMBER, msgspec.msgpack.Decoder(_member_view(kind, trusted)), kind
    if kind is ev.MemberCreated:
        created = _CreatedBytes if trusted else _CheckedCreatedBytes
        return _CREATED, msgspec.msgpack.Decoder(created), kind
    if kind is ev.GroupSubmitted:
        return _SUBMITTED, msgspec.msgpack.Decoder(_SubmittedBytes), kind
    return _WORLD, decoder, kind


def fold_records(world: World, records: Iterable[Record], *, trusted: bool) -> World:
    """``world`` with the event of each record in ``records`` (in position order) folded
    in, its position the last record's. ``trusted``: the store checked each record's
    checksum as it read it, so the actors in the bytes are not checked again (ADR 0089;
    the flag is on for each decode call alone)."""
    apply, members = world.apply, world.members
    world.forget_node_use()  # member events go around `apply`: counted afresh when read
    met = _Met()
    routes: dict[str, _Route] = {}
    checked = CHECKED_LOG_BYTES
    # The clock and position as locals, the World's set once (and where a record fails):
    # a local costs less than a struct's attribute on every record.
    clock, position = world.clock_ns, world.position
    with gc_paused():
        try:
            for record in records:
                how, decoder, kind = routes.get(record.topic) or _route(routes, record, trusted)
                if how is _TO_MEMBER:
                    # A view holds no actor, or (bytes the store did not check) one
                    # checked as decoded: the trust flag is not needed around it.
                    try:
                        event = decoder.decode(record.state)
                    except _DECODE_ERRORS:
                        # Not as this fold reads it: the plain decode says why.
                        event = _decoded(record, trusted)
                        apply(event)
                    else:
                        member = members.get(event.originator_id)
                        if member is None:
                            # Not a key of the World (an unknown member, or another
                            # spelling of an id): the plain fold finds it or names it.
                            apply(_decoded(record, trusted))
                        else:
                            apply_member_event(member, event, kind)
                else:
                    checked.on = trusted
                    try:
                        event = decoder.decode(record.state)
                    except _DECODE_ERRORS:
                        if how is _WORLD:
                            raise
                        how = _WORLD  # not as this fold reads it: the plain decode says why
                        event = _decoded(record, trusted)
                    finally:
                        checked.on = False
                    if how is _CREATED:
                        if _created(world, event, met.pending) is None:
                            # Not as its group's submission here said: folded plainly.
                            apply(_decoded(record, trusted))
                    elif how is _SUBMITTED:
                        _submit(world, event, record, trusted, met)
                    else:
                        apply(event)
                at_ns = event.at_ns
                if at_ns > clock:  # noqa: PLR1730 (no max() call: the hot loop)
                    clock = at_ns
                position = record.id
        finally:
            world.clock_ns, world.position = clock, position
    return world


def _submit(world: World, event: Any, record: Record, trusted: bool, met: _Met) -> None:
    """Fold the submission ``event`` (read with its member specs as bytes and its member
    ids as text) into ``world``, and keep its members' spec bytes by their ids' text in
    ``met`` until their creations. Ids that are not UUIDs: the plain decode of
    ``record`` says why."""
    try:
        member_ids = msgspec.convert(event.member_ids, _MEMBER_IDS)
    except _DECODE_ERRORS:
        world.apply(_decoded(record, trusted))
        return
    submitted = _submitted(event, member_ids, met.specs)
    world.apply(submitted)
    key = id_text(submitted.originator_id)
    group = world.groups[key]
    members_bytes = event.spec.members
    # Met by the text the World keys members by (`id_text`'s: 36 characters, lower
    # case). Each text is a UUID's (converted above), 32 or 36 characters long: all are
    # 36 when their lengths sum to 36 each, and lower case when joined they are. Ids
    # spelt otherwise leave their creations to the plain fold. Once per submission, not
    # a text made per id.
    texts = event.member_ids
    joined = "".join(texts)
    if len(joined) != _ID_TEXT_LENGTH * len(texts) or joined != joined.lower():
        return
    for index, text in enumerate(texts):
        met.pending[text] = (group, index, members_bytes[index], key)


def _submitted(
    event: Any, member_ids: tuple[UUID, ...], specs: dict[bytes, MemberSpec]
) -> ev.GroupSubmitted:
    """The `GroupSubmitted` of ``event`` (read with its member specs as bytes) and its
    ``member_ids``, each member spec decoded once per fold: a spec whose bytes were met
    before (groups submitted from one template) is the spec decoded then, as a restore
    shares it (ADR 0129). Equal bytes decode to equal specs."""
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
    fields["member_ids"] = member_ids
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
