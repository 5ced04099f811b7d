"""Snapshots of schemas 3 and 4 (written by earlier releases) still load, to the very
state the log replays to but for the runtime history they do not hold, and verify; a
controller no longer restores from them but replays the log once (ADR 0113), then
writes snapshots of this release's schema beside them.

``schema3_log/`` holds a store whose snapshots were all written under schema 3 (made by
``write_schema3_log`` at the commit that added it), ``schema4_log/`` one written under
schema 4 (``write_schema4_log``). Both logs hold a member run that succeeded, so the
history replayed is not empty and what the old snapshots lack is really tested.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import msgspec
import pytest

from costart.controller import Controller
from costart.domain.runtime_history import RuntimeHistory
from costart.domain.world import World
from costart.eventlog.restore import restore
from costart.eventlog.snapshot_schema import SNAPSHOT_SCHEMA, encode_state, recorded_form
from costart.eventlog.snapshots import OlderSchemaSnapshotError, encode_world
from costart.replay.rebuild import rebuild
from costart.replay.rebuild_check import verify
from costart.store.replay_log import open_log
from tests.builders import USER, ManualClock

HERE = Path(__file__).parent
SNAPSHOT_POSITIONS = [8, 16, 24, 32, 43, 51, 59, 67, 80]


@pytest.fixture(params=[3, 4], ids=["schema3", "schema4"])
def old_store(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[int, Path]:
    """A private copy of the store of that schema (opening one may create its lock)."""
    copy = tmp_path / "store"
    shutil.copytree(HERE / f"schema{request.param}_log", copy)
    return request.param, copy


def _without_history(world: World) -> World:
    return msgspec.structs.replace(world, runtime_history=RuntimeHistory())


def test_every_fixture_snapshot_loads_to_the_replayed_world_without_its_history(
    old_store: tuple[int, Path],
) -> None:
    schema, store = old_store
    with open_log(store) as log:
        snapshots = log.snapshots.all()
        assert [s.position for s in snapshots] == SNAPSHOT_POSITIONS  # type: ignore[union-attr]
        for snapshot in snapshots:
            assert not isinstance(snapshot, Exception), snapshot
            assert snapshot.schema == schema
            loaded = snapshot.world()
            assert loaded.runtime_history == RuntimeHistory()
            replayed = rebuild(log.source, until=snapshot.position)
            assert loaded == _without_history(replayed)
            assert encode_world(loaded) == recorded_form(replayed, schema)
            # Migrated, it is the World a snapshot of this release of the same state
            # without its history gives...
            assert encode_state(loaded) == encode_state(_without_history(replayed))
            # ...members sharing their group's spec and ids, as in the live state.
            for member in loaded.members.values():
                group = loaded.group_by_id(member.group_id)
                index = group.member_ids.index(member.id)
                assert member.spec is group.spec.members[index]
                assert member.group_id is group.id and member.id is group.member_ids[index]
            with pytest.raises(OlderSchemaSnapshotError):
                snapshot.restorable_world()
        # The last one lacks a history the replay has: verify compares without it.
        assert rebuild(log.source).runtime_history.learned == 1
        report = verify(log.source, log.snapshots, log_hash_at=log.record_hash)
        assert report.ok, report.divergence
        assert report.snapshots_checked == len(SNAPSHOT_POSITIONS)


def test_a_controller_replays_past_the_old_snapshots_and_writes_snapshots_of_this_schema(
    old_store: tuple[int, Path],
) -> None:
    schema, store = old_store
    with open_log(store) as log:
        replayed = rebuild(log.source)
        restored, snapshot, skipped = restore(log.snapshots, log.source)
    assert snapshot is None
    assert [error.position for error in skipped] == SNAPSHOT_POSITIONS[::-1]
    assert all(isinstance(error, OlderSchemaSnapshotError) for error in skipped)
    assert f"schema {schema}" in str(skipped[0])
    assert encode_world(restored) == encode_world(replayed)
    assert restored.runtime_history == replayed.runtime_history != RuntimeHistory()
    env = {"PERSISTENCE_MODULE": "costart.store", "COSTART_LMDB_PATH": str(store)}
    controller = Controller(env=env, clock=ManualClock())
    assert encode_world(controller.world) == encode_world(replayed)
    controller.cancel("g1", actor=USER)
    controller.snapshot_now()
    controller.close()
    with open_log(store) as log:
        newest, world, skipped = log.snapshots.newest_valid()
        assert skipped == [] and newest is not None and newest.schema == SNAPSHOT_SCHEMA
        assert world is not None and encode_world(world) == encode_world(rebuild(log.source))
        assert world.runtime_history == replayed.runtime_history
        report = verify(log.source, log.snapshots, log_hash_at=log.record_hash)
    assert report.ok, report.divergence
    assert report.snapshots_checked == len(SNAPSHOT_POSITIONS) + 1
