"""Whole-state snapshots: field-complete, byte-exact against replay, and a corrupt newest
snapshot falls back to an older one."""

from __future__ import annotations

import dataclasses
import gc
import itertools
import weakref
from pathlib import Path

import msgspec
import pytest
from rich.console import Console

from costart.cli.walkthrough import run_demo
from costart.domain.states import GroupState, MemberState
from costart.domain.world import World
from costart.eventlog.compact_world import ROW_NAMES, CompactWorld
from costart.eventlog.restore import restore
from costart.eventlog.snapshot_schema import encode_state
from costart.eventlog.snapshots import SNAPSHOT_STREAM_ID, CorruptSnapshotError, encode_world
from costart.replay.diff import diff_worlds
from costart.replay.rebuild import rebuild
from costart.replay.source import RecorderSource
from tests.builders import a_group, full_placement, new_controller, ready

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def demo(tmp_path):
    console = Console(file=(tmp_path / "out.txt").open("w"))
    return run_demo(
        ROOT / "scenarios" / "rl-post-training.toml", console, env={"COSTART_SNAPSHOT_EVERY": "7"}
    )


def _field_names(cls: type[msgspec.Struct]) -> set[str]:
    return {f.encode_name for f in msgspec.structs.fields(cls)}


def test_snapshots_carry_every_field_of_every_state_class(demo):
    snapshot, _world, _ = demo.session.snapshots_store.newest_valid()
    raw = msgspec.msgpack.decode(snapshot.state)
    # The compact schema (ADR 0088): the World as an array of its parts, members as
    # rows beside their group holding every field but those the group holds.
    assert len(raw) == len(msgspec.structs.fields(CompactWorld))
    assert {*ROW_NAMES, "id", "group_id", "spec"} == _field_names(MemberState)
    assert len(raw[0]) == len(raw[1]) == len(demo.world.groups)
    for group, rows in zip(raw[0], raw[1], strict=True):
        assert set(group) == _field_names(GroupState)
        assert all(len(row) == len(ROW_NAMES) for row in rows)
    assert sum(len(rows) for rows in raw[1]) == len(demo.world.members)
    # and it restores to a state equal to the live one, field by field
    restored, _, _ = restore(demo.session.snapshots_store, RecorderSource(demo.recorder))
    assert diff_worlds(restored, demo.world) == []
    assert encode_world(restored) == encode_world(demo.world)


def test_every_snapshot_equals_the_replay_to_its_position_byte_for_byte(demo):
    source = RecorderSource(demo.recorder)
    snapshots = demo.session.snapshots_store.all()
    positions = [s.position for s in snapshots]
    assert len(positions) >= 3
    assert all(later - earlier >= 7 for earlier, later in itertools.pairwise(positions))
    for snapshot in snapshots:
        assert encode_state(rebuild(source, until=snapshot.position)) == snapshot.state
        assert (
            encode_state(rebuild(source, until=snapshot.position, start=World())) == snapshot.state
        )


def test_restore_from_a_snapshot_plus_tail_equals_a_full_replay(demo):
    source = RecorderSource(demo.recorder)
    world, snapshot, skipped = restore(demo.session.snapshots_store, source)
    assert snapshot is not None and skipped == []
    assert snapshot.position == demo.session.snapshots_store.positions()[-1] <= demo.world.position
    assert encode_world(world) == encode_world(rebuild(source))


def _corrupt_newest(recorder) -> None:
    records = recorder._stored_events  # the in-memory recorder's list, in insertion order
    index = max(i for i, r in enumerate(records) if r.originator_id == SNAPSHOT_STREAM_ID)
    record = records[index]
    flipped = bytearray(record.state)
    flipped[len(flipped) // 2] ^= 0x40
    records[index] = dataclasses.replace(record, state=bytes(flipped))


def test_a_corrupt_newest_snapshot_falls_back_to_an_older_one_and_says_so(demo):
    *_, older, newest = demo.session.snapshots_store.positions()
    _corrupt_newest(demo.session.snapshots_store.recorder)
    world, snapshot, skipped = restore(demo.session.snapshots_store, RecorderSource(demo.recorder))
    assert snapshot is not None and snapshot.position == older
    assert [e.position for e in skipped] == [newest]
    assert isinstance(skipped[0], CorruptSnapshotError) and "corrupt" in str(skipped[0])
    assert encode_world(world) == encode_world(demo.world)


def test_snapshot_on_demand_and_idempotent_per_position(demo):
    position = demo.snapshot_now()
    assert position == demo.world.position
    assert demo.snapshot_now() == position
    assert demo.session.snapshots_store.positions().count(position) == 1


def test_restore_replays_the_tail_after_the_snapshot():
    controller = new_controller()
    spec = a_group().with_member("a", claims=("c",)).with_member("b", replicas=2).build()
    controller.submit(spec)
    at = controller.snapshot_now()
    controller.apply_decisions([full_placement(spec)])
    ready(controller, "g1/a", "c")
    world, snapshot, _ = restore(
        controller.session.snapshots_store, RecorderSource(controller.recorder)
    )
    assert snapshot is not None and snapshot.position == at < world.position
    assert world.group_named("g1").status == "RUNNING"
    assert encode_world(world) == encode_world(controller.world)


def test_a_restarted_controller_restores_snapshot_and_tail_and_carries_on():
    clock_controller = new_controller(None, COSTART_SNAPSHOT_EVERY="4")
    spec = a_group().with_member("a", claims=("c",)).with_member("b", replicas=2).build()
    clock_controller.submit(spec)
    clock_controller.apply_decisions([full_placement(spec)])
    restarted = type(clock_controller)(
        restart_of=clock_controller, env={"COSTART_SNAPSHOT_EVERY": "4"}
    )
    assert encode_world(restarted.world) == encode_world(clock_controller.world)
    ready(restarted, "g1/a", "c")
    assert restarted.may_start("g1/b")


def test_a_restarted_controller_does_not_keep_the_crashed_one_alive():
    crashed = new_controller(None, COSTART_SNAPSHOT_EVERY="4")
    crashed.submit(a_group().with_member("a").build())
    restarted = type(crashed)(restart_of=crashed, env={"COSTART_SNAPSHOT_EVERY": "4"})
    gone = weakref.ref(crashed)
    was_enabled = gc.isenabled()
    gc.disable()  # freed by reference counting, not left to the cyclic collector
    try:
        del crashed
        assert gone() is None
    finally:
        if was_enabled:
            gc.enable()
    assert restarted.group("g1").status == "PENDING"
