"""Snapshot schemas 4 and 5: the `World` in a compact encoding (ADR 0088, ADR 0113).

Schema 3 stored the World as it is (`canonical_encode`): every member carried its own
copy of its spec (already in its group's spec), its id, its group's id and its map key
as 36-character text. Schema 4 stores each fact once:

- groups in submission order, ids as their 16 bytes;
- each group's members as rows beside it, in the order of the group's ``member_ids``:
  a row holds a member's state without its id, group id and spec, which decoding takes
  from the group (the objects the live state shares too, ADR 0013);
- the live names as indexes into the groups.

Rows are arrays (``array_like``), not maps, so a field name is not repeated per member.
The row types are made from `MemberState`'s own fields, so a field added to the state is
added to the snapshot without a second list to keep in step; adding one is still a
schema change (`costart.eventlog.snapshot_schema`).

Schema 5 adds the runtime history (ADR 0111) after the fields of schema 4; schema 4
bytes still decode, to a World whose history is empty (ADR 0113).

Encoding is deterministic: groups are ordered by submission, rows by the spec, and the
remaining maps by their sorted keys (``order="deterministic"``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import msgspec

from costart.domain import RuntimeHistory
from costart.domain.ids import id_text
from costart.domain.spec_types import MemberSpec, Shape
from costart.domain.states import NO_TASK_CLAIMS, ClaimStatus, GroupState, MemberState
from costart.domain.world import World

_FROM_GROUP: Final = ("id", "group_id", "spec")
"""The member fields a row leaves out: decoding takes them from the member's group."""

_ROW_FIELDS: Final[tuple[msgspec.structs.FieldInfo, ...]] = tuple(
    f for f in msgspec.structs.fields(MemberState) if f.name not in _FROM_GROUP
)
ROW_NAMES: Final[tuple[str, ...]] = tuple(f.name for f in _ROW_FIELDS)
if msgspec.structs.fields(MemberState)[0].name != "id" or [
    f.name for f in msgspec.structs.fields(MemberState)[1:4]
] != ["version", "group_id", "spec"]:
    # `_world_of` builds members positionally: id, the row's first value, group id, spec.
    raise ImportError("MemberState's first fields must be id, version, group_id, spec")


def _row_field(field: msgspec.structs.FieldInfo) -> tuple[str, Any, Any]:
    default = (
        msgspec.field(default_factory=field.default_factory)
        if field.default is msgspec.NODEFAULT
        else field.default
    )
    return (field.name, field.type, default)


MemberRow: Final[Any] = msgspec.defstruct(
    "MemberRow",
    [_row_field(f) for f in _ROW_FIELDS],
    array_like=True,
    gc=False,
)
"""A member's state without the fields its group holds, encoded as an array."""


class CompactWorld4(msgspec.Struct, array_like=True, gc=False):
    """The World as schema 4 stores it. ``members[i]`` are the rows of ``groups[i]``'s
    members (None: a member the group names but the log has not created yet);
    ``live`` maps each live name to its group's index in ``groups``."""

    groups: list[GroupState]
    members: list[list[MemberRow | None]]
    live: dict[str, int]
    node_status: dict[str, str]
    cluster_version: int
    submissions: int
    clock_ns: int
    position: int


class CompactWorld(CompactWorld4, array_like=True, gc=False):
    """The World as schema 5 stores it: schema 4's fields, then the runtime history."""

    runtime_history: RuntimeHistory


_ENCODER: Final = msgspec.msgpack.Encoder(order="deterministic", uuid_format="bytes")
_DECODER: Final = msgspec.msgpack.Decoder(CompactWorld)
_DECODER_4: Final = msgspec.msgpack.Decoder(CompactWorld4)


class IncompleteWorldError(ValueError):
    """The World holds a member no group names: it cannot be stored compactly."""


class SharedValues:
    """One object per equal value across the state decoded: node names and the empty
    task claims (ADR 0106), claim maps, and the text, tuples and shapes of the specs
    (ADR 0129).

    A decode makes a new object for every occurrence of a value: 100k members placed on
    a few thousand nodes would hold one copy of a node's name per task and assignment,
    and ten thousand groups of the same members one copy of the same owner, member
    names, claim names and shape per member. The values are equal, so sharing them
    changes no state, only its size; each is a frozen value (or a read-only map) nothing
    else holds yet, so it is set in place (`force_setattr`) rather than rebuilt."""

    __slots__ = ("_maps", "_shapes", "_specs", "_texts", "_tuples")

    def __init__(self) -> None:
        self._specs: dict[MemberSpec, MemberSpec] = {}
        self._texts: dict[str, str] = {}
        self._tuples: dict[tuple[str, ...], tuple[str, ...]] = {}
        self._shapes: dict[Shape, Shape] = {}
        self._maps: dict[tuple[tuple[str, str], ...], Mapping[str, ClaimStatus]] = {
            (): NO_TASK_CLAIMS
        }

    def names(self, names: tuple[str, ...]) -> tuple[str, ...]:
        """The shared tuple equal to ``names``, of shared text."""
        shared = self._tuples.get(names)
        if shared is None:
            text = self._texts.setdefault
            shared = self._tuples[names] = tuple(text(name, name) for name in names)
        return shared

    def spec(self, group: GroupState) -> None:
        """Share ``group``'s text and its member specs: a spec equal to one decoded
        before is that one (groups submitted from one template); a new one has its
        text, tuples and shape shared."""
        text, force = self._texts.setdefault, msgspec.structs.force_setattr
        spec = group.spec
        force(spec, "name", text(spec.name, spec.name))
        force(spec, "owner", text(spec.owner, spec.owner))
        group.name = spec.name
        one = self._specs.setdefault
        members = []
        for member in spec.members:
            # Hashable: a spec is frozen all the way down (a test checks).
            shared = one(member, member)
            if shared is member:
                self._parts(member)
            members.append(shared)
        force(spec, "members", tuple(members))

    def _parts(self, member: MemberSpec) -> None:
        text, force = self._texts.setdefault, msgspec.structs.force_setattr
        force(member, "name", text(member.name, member.name))
        force(member, "owner", text(member.owner, member.owner))
        force(member, "profile", text(member.profile, member.profile))
        force(member, "shape", self._shapes.setdefault(member.shape, member.shape))
        force(member, "claims", self.names(member.claims))
        force(member, "task_claims", self.names(member.task_claims))

    def member(self, member: MemberState) -> None:
        """Share ``member``'s claim maps and its tasks' and assignments' node names.
        (Sharing equal assignments whole saved 30 B more per member for a quarter more
        of this pass's instructions: not done.)"""
        name, force = self._texts.setdefault, msgspec.structs.force_setattr
        # A claim map is keyed by its items in their order (a map is shown in its order).
        maps = self._maps.setdefault
        claims = member.claims
        member.claims = maps(tuple(claims.items()), claims)
        for task in member.tasks:
            force(task, "node", name(task.node, task.node))
            claims = task.claims
            force(task, "claims", maps(tuple(claims.items()), claims) if claims else NO_TASK_CLAIMS)
        for assignment in member.assignments:
            force(assignment, "node", name(assignment.node, assignment.node))
        for assignment in member.held:
            force(assignment, "node", name(assignment.node, assignment.node))


def encode_compact(world: World) -> bytes:
    """The schema 5 bytes of ``world``."""
    ordered = sorted(world.groups.items(), key=lambda item: (item[1].submission_seq, item[0]))
    index_of = {key: i for i, (key, _) in enumerate(ordered)}
    members, stored = world.members, 0
    rows: list[list[Any]] = []
    for _, group in ordered:
        group_rows: list[Any] = []
        for member_id in group.member_ids:
            member = members.get(id_text(member_id))
            if member is None:
                group_rows.append(None)
                continue
            group_rows.append(MemberRow(*[getattr(member, name) for name in ROW_NAMES]))
            stored += 1
        rows.append(group_rows)
    if stored != len(members):
        raise IncompleteWorldError(
            f"{len(members) - stored} member(s) belong to no group's member_ids"
        )
    compact = CompactWorld(
        groups=[group for _, group in ordered],
        members=rows,
        live={name: index_of[key] for name, key in world.live_names.items()},
        node_status=world.node_status,
        cluster_version=world.cluster_version,
        submissions=world.submissions,
        clock_ns=world.clock_ns,
        position=world.position,
        runtime_history=world.runtime_history,
    )
    return _ENCODER.encode(compact)


def decode_compact(data: bytes, schema: int = 5) -> World:
    """The World of schema 5 (or 4) bytes; schema 4 holds no runtime history, so the
    World's is empty. Raises `msgspec.ValidationError` (or `DecodeError`) if they are not
    a whole compact World of that schema."""
    if schema == 4:
        return _world_of(_DECODER_4.decode(data), RuntimeHistory())
    if schema != 5:
        raise msgspec.ValidationError(f"no compact snapshot schema {schema}")
    compact = _DECODER.decode(data)
    return _world_of(compact, compact.runtime_history)


def _world_of(compact: CompactWorld4, history: RuntimeHistory) -> World:
    groups: dict[str, GroupState] = {}
    members: dict[str, MemberState] = {}
    keys: list[str] = []
    values_of, make = msgspec.structs.astuple, MemberState
    shared = SharedValues()
    for group, rows in zip(compact.groups, compact.members, strict=True):
        key = id_text(group.id)
        groups[key] = group
        keys.append(key)
        shared.spec(group)
        specs, ids, group_id = group.spec.members, group.member_ids, group.id
        if len(rows) != len(ids) or len(specs) != len(ids):
            raise msgspec.ValidationError(
                f"group {group.name}: {len(rows)} member rows for {len(ids)} members"
            )
        for index, row in enumerate(rows):
            if row is None:
                continue
            member_id = ids[index]
            # The row's values in MemberState's field order (`_ROW_FIELDS`), its id,
            # group id and spec put in their places: one positional call.
            values = values_of(row)
            member = make(member_id, values[0], group_id, specs[index], *values[1:])
            shared.member(member)
            members[id_text(member_id)] = member
    try:
        live = {name: keys[index] for name, index in compact.live.items()}
    except IndexError:
        raise msgspec.ValidationError("a live name points past the groups") from None
    return World(
        groups=groups,
        members=members,
        live_names=live,
        node_status=compact.node_status,
        cluster_version=compact.cluster_version,
        submissions=compact.submissions,
        clock_ns=compact.clock_ns,
        position=compact.position,
        runtime_history=history,
    )
