"""The compact snapshot encoding (schema 4, ADR 0088): the World round-trips exactly,
members share their group's objects, and bytes that are not a whole World are refused."""

from __future__ import annotations

import typing

import msgspec
import pytest

from costart.domain.actors import Actor
from costart.domain.decisions import PlaceGroup
from costart.domain.events import Assignment, ClaimReady
from costart.domain.spec_types import MemberSpec
from costart.domain.states import NO_TASK_CLAIMS
from costart.domain.world import World
from costart.eventlog.compact_world import (
    IncompleteWorldError,
    decode_compact,
    encode_compact,
)
from costart.eventlog.snapshots import encode_world
from tests.builders import ManualClock, a_group, new_controller
from tests.multi_group_story import run_story


@pytest.fixture
def world() -> World:
    """Groups running, cancelled and pending, a restart, node reports."""
    clock = ManualClock()
    controller = new_controller(clock)
    run_story(controller, clock)
    assert len(controller.world.live_names) < len(controller.world.groups)
    return controller.world


def test_the_compact_form_decodes_to_the_same_world_with_shared_objects(world: World) -> None:
    data = encode_compact(world)
    back = decode_compact(data)
    assert back == world and encode_world(back) == encode_world(world)
    assert len(data) < len(encode_world(world))
    for member in back.members.values():
        group = back.group_by_id(member.group_id)
        index = group.member_ids.index(member.id)
        assert member.spec is group.spec.members[index] and member.group_id is group.id
    assert encode_compact(back) == data  # deterministic


def test_every_node_name_decoded_is_one_shared_string(world: World) -> None:
    """Tasks, assignments and held assignments on one node hold one string object, and
    tasks without claims the one empty map (ADR 0106): a decode would otherwise make a
    copy per occurrence."""
    back = decode_compact(encode_compact(world))
    by_name: dict[str, set[int]] = {}
    placed = 0
    for member in back.members.values():
        for holder in (*member.tasks, *member.assignments, *member.held):
            by_name.setdefault(holder.node, set()).add(id(holder.node))
            placed += 1
    assert placed > len(by_name) > 0  # some node holds more than one task
    tasks = [task for member in back.members.values() for task in member.tasks]
    assert all(task.claims is NO_TASK_CLAIMS for task in tasks if not task.claims)
    assert any(task.claims is NO_TASK_CLAIMS for task in tasks)
    assert all(len(objects) == 1 for objects in by_name.values()), by_name
    assert back == world and encode_compact(back) == encode_compact(world)


def test_a_member_no_group_names_is_refused_on_encoding(world: World) -> None:
    stray = next(iter(world.members.values()))
    world.members["stray"] = stray
    with pytest.raises(IncompleteWorldError, match="1 member"):
        encode_compact(world)


def test_bytes_that_are_not_a_whole_world_are_refused(world: World) -> None:
    raw = msgspec.msgpack.decode(encode_compact(world))
    short_rows = [*raw]
    short_rows[1] = [rows[:-1] for rows in raw[1]]
    with pytest.raises(msgspec.ValidationError, match="member rows"):
        decode_compact(msgspec.msgpack.encode(short_rows))
    far_live = [*raw]
    far_live[2] = {"a": 99}
    with pytest.raises(msgspec.ValidationError, match="live name"):
        decode_compact(msgspec.msgpack.encode(far_live))
    with pytest.raises(msgspec.ValidationError):
        decode_compact(msgspec.msgpack.encode(raw[:-1]))


@pytest.fixture
def placed_alike() -> World:
    """Two groups of the same members, each placed on one node of its own, every claim
    pending except one: equal claim maps and member specs repeat."""
    controller = new_controller(ManualClock())
    for name in ("a", "b"):
        spec = (
            a_group(name)
            .with_member("m0", tasks=2, claims=("gpus",), task_claims=("nic",))
            .with_member("m1", tasks=2, claims=("gpus",), task_claims=("nic",))
            .build()
        )
        controller.submit(spec)
        on_one = {
            m.name: (Assignment(0, f"n-{name}"), Assignment(1, f"n-{name}")) for m in spec.members
        }
        controller.apply_decisions([PlaceGroup(spec.name, on_one)])
    controller.claim_ready("b/m1", "gpus", 1, actor=Actor.host("test"))
    return controller.world


def test_equal_values_decoded_are_one_object(placed_alike: World) -> None:
    """Equal claim maps, member specs and their texts, claim-name tuples and shapes
    decode to one object each (ADR 0129); the World is the one encoded."""
    world = placed_alike
    back = decode_compact(encode_compact(world))
    maps: dict[tuple[tuple[str, str], ...], set[int]] = {}
    for member in back.members.values():
        maps.setdefault(tuple(member.claims.items()), set()).add(id(member.claims))
        for task in member.tasks:
            maps.setdefault(tuple(task.claims.items()), set()).add(id(task.claims))
    parts: dict[object, set[int]] = {}
    for group in back.groups.values():
        assert group.name is group.spec.name
        parts.setdefault(group.spec.owner, set()).add(id(group.spec.owner))
        for spec in group.spec.members:
            for value in (spec.name, spec.owner, spec.profile, spec.shape, spec.claims):
                parts.setdefault(value, set()).add(id(value))
            parts.setdefault(spec.task_claims, set()).add(id(spec.task_claims))
    assert len(maps) == 3  # member claims pending, member claims ready, task claims
    a, b = (back.group_named(name).spec.members for name in ("a", "b"))
    assert all(x is y for x, y in zip(a, b, strict=True))  # one template: one spec each
    assert all(len(objects) == 1 for objects in maps.values()), maps
    assert all(len(objects) == 1 for objects in parts.values()), parts
    assert back == world and encode_compact(back) == encode_compact(world)


def test_a_claim_change_after_a_decode_changes_that_member_alone(placed_alike: World) -> None:
    """Members whose claims were equal share one map after a decode: the fold gives the
    member whose claim changes a map of its own, so the others keep theirs."""
    back = decode_compact(encode_compact(placed_alike))
    first = back.member_named(back.group_named("a"), "m0")
    others = [m for m in back.members.values() if m.claims is first.claims and m is not first]
    assert len(others) == 2  # a/m1 and b/m0 share a/m0's map of pending claims
    back.apply(
        ClaimReady(
            originator_id=first.id,
            originator_version=first.version + 1,
            group_id=first.group_id,
            at_ns=back.clock_ns + 1,
            claim="gpus",
            attempt=first.attempt,
            actor=Actor.host("test"),
        )
    )
    assert first.claims == {"gpus": "READY"}
    assert [dict(m.claims) for m in others] == [{"gpus": "PENDING"}] * 2


def _mutable_parts(kind: object, path: str, seen: set[object]) -> list[str]:
    """The places in the type ``kind`` where a value could be changed in place."""
    origin = typing.get_origin(kind)
    if origin is typing.Annotated:
        return _mutable_parts(typing.get_args(kind)[0], path, seen)
    found = [path] if origin in (dict, list, set) or kind in (dict, list, set) else []
    for arg in typing.get_args(kind):
        found += _mutable_parts(arg, path, seen)
    if isinstance(kind, type) and issubclass(kind, msgspec.Struct) and kind not in seen:
        seen.add(kind)
        if not kind.__struct_config__.frozen:
            found.append(path)
        for field in msgspec.structs.fields(kind):
            found += _mutable_parts(field.type, f"{path}.{field.name}", seen)
    return found


def test_a_member_spec_is_frozen_all_the_way_down() -> None:
    """The decode shares equal member specs by hashing them (ADR 0129): a part that
    could change in place would change every group sharing it (and not hash)."""
    assert _mutable_parts(MemberSpec, "MemberSpec", set()) == []
    assert _mutable_parts(dict[str, int], "a map", set()) == ["a map"]  # it finds them
