"""Which snapshot schema this release writes, and how an older snapshot is compared.

A snapshot records the canonical encoding of the whole state. When the encoding rule or
the state's fields change, the schema number moves on, and a snapshot of an older schema
is compared (by `replay verify`) through `recorded_form`: what a snapshot of that schema
holds of a state rebuilt by this release. Snapshots of an older schema carry on being
restorable as long as decoding them gives the whole state (see `restorable`).

Schemas:
1. the first release: every field encoded, defaults included.
2. spec and event structs leave fields at their default out of the encoding
   (``omit_defaults``), so a field added later with a default does not change old
   records; the values are those of schema 1.
3. members carry their placement ``attempt`` and per-task state (``tasks``). A snapshot
   of schema 1 or 2 does not hold them, and they cannot be derived from what it holds
   (which tasks a replica's re-placement made newer), so it is not restored from: the
   controller replays the log instead, once, and writes schema 3 snapshots from then on.
4. compact (`costart.eventlog.compact_world`, ADR 0088): binary ids, each spec stored
   once (in its group), members as arrays beside their group. The values are those of
   schema 3, so a schema 3 snapshot is still restored from: `decode_state` decodes it
   as it was written and links each member to its group's spec and ids, which gives
   the very World a schema 4 snapshot of the same state gives.
5. the World's runtime history (ADR 0111) after schema 4's fields (ADR 0113), and each
   group's ``admitted_until_ns`` (a borrower admitted on an estimate, ADR 0121). A schema 3
   or 4 snapshot decodes to the World it holds with an empty history, and `replay
   verify` compares it without the history (`recorded_form`). It is no longer restored
   from: a controller that started from it would learn only from the runs that end
   after it, write snapshots that differ from a replay of the same log and estimate
   differently from a controller that replayed. The log is replayed instead, once.
"""

from __future__ import annotations

from typing import Final

import msgspec

from costart.domain.ids import id_text
from costart.domain.states import GroupState, MemberState
from costart.domain.world import World
from costart.eventlog.codec import canonical_decode, canonical_encode
from costart.eventlog.compact_world import decode_compact, encode_compact

SNAPSHOT_SCHEMA: Final = 5
"""The schema of the snapshots this release writes."""

_ADDED_IN: Final[dict[int, dict[type[msgspec.Struct], tuple[str, ...]]]] = {
    3: {MemberState: ("attempt", "tasks")},
    5: {World: ("runtime_history",), GroupState: ("admitted_until_ns",)},
}
"""The state fields each schema added: a snapshot of an earlier schema does not hold them."""


def _defaults(kind: type[msgspec.Struct], schema: int) -> dict[str, object]:
    """The fields of ``kind`` added after ``schema``, each at its default."""
    dropped = {
        name
        for added, fields in _ADDED_IN.items()
        if added > schema
        for name in fields.get(kind, ())
    }
    return {
        f.name: f.default_factory() if f.default is msgspec.NODEFAULT else f.default
        for f in msgspec.structs.fields(kind)
        if f.name in dropped
    }


def _without(world: World, schema: int) -> World:
    """A copy of ``world`` with the fields added after ``schema`` at their defaults (what
    decoding a snapshot of ``schema`` gives for them)."""
    world_defaults = _defaults(World, schema)
    if world_defaults:
        world = msgspec.structs.replace(world, **world_defaults)
    group_defaults = _defaults(GroupState, schema)
    if group_defaults:
        groups = {
            key: msgspec.structs.replace(group, **group_defaults)
            for key, group in world.groups.items()
        }
        world = msgspec.structs.replace(world, groups=groups)
    member_defaults = _defaults(MemberState, schema)
    if not member_defaults:
        return world
    members = {
        key: msgspec.structs.replace(member, **member_defaults)
        for key, member in world.members.items()
    }
    return msgspec.structs.replace(world, members=members)


def recorded_form(world: World, schema: int) -> bytes:
    """The canonical bytes of ``world`` as a snapshot of ``schema`` records them, decoded
    and encoded again by this release: the fields added since ``schema`` at their
    defaults."""
    if not 1 <= schema <= SNAPSHOT_SCHEMA:
        raise ValueError(f"snapshot schema {schema} is unknown to this release")
    return canonical_encode(_without(world, schema))


def restorable(schema: int) -> bool:
    """Does a snapshot of ``schema`` decode to the whole state of this release?"""
    return schema == SNAPSHOT_SCHEMA


def encode_state(world: World) -> bytes:
    """The state bytes of a snapshot of ``world`` this release writes."""
    return encode_compact(world)


def decode_state(state: bytes, schema: int) -> World:
    """The World in a snapshot's ``state`` of ``schema`` (schemas 1 to 3: the World as
    it was canonically encoded; 4 and 5 compact; the fields a schema lacks at their
    defaults, so a schema 4 World has an empty runtime history). Raises
    `msgspec.MsgspecError` on bytes that do not decode."""
    if schema in (4, SNAPSHOT_SCHEMA):
        return decode_compact(state, schema)
    if not 1 <= schema < 4:
        raise msgspec.ValidationError(f"snapshot schema {schema} is unknown to this release")
    return _linked(canonical_decode(state, World))


def _linked(world: World) -> World:
    """``world`` with each member holding its group's spec and id objects, as the live
    state and a schema 4 snapshot do (ADR 0013): an older schema's bytes gave each
    member copies of its own. Values are unchanged."""
    for group in world.groups.values():
        specs = group.spec.members
        for index, member_id in enumerate(group.member_ids):
            member = world.members.get(id_text(member_id))
            if member is not None and index < len(specs) and member.spec == specs[index]:
                member.spec, member.id, member.group_id = specs[index], member_id, group.id
    return world
