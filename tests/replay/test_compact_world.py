"""The compact snapshot encoding (schema 4, ADR 0088): the World round-trips exactly,
members share their group's objects, and bytes that are not a whole World are refused."""

from __future__ import annotations

import msgspec
import pytest

from costart.domain.states import NO_TASK_CLAIMS
from costart.domain.world import World
from costart.eventlog.compact_world import (
    IncompleteWorldError,
    decode_compact,
    encode_compact,
)
from costart.eventlog.snapshots import encode_world
from tests.builders import ManualClock, new_controller
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
