"""Snapshots of schema 3 (the World as it was, before the compact schema of ADR 0088)
still restore, to the very state the log replays to.

``schema3_log/`` holds a store whose snapshots were all written under schema 3 (made by
``write_schema3_log`` at the commit that added it). This release must restore from its
newest snapshot without replaying the log, verify every snapshot against a replay,
and write its own snapshots in the compact schema beside the old ones.
"""

from __future__ import annotations

from pathlib import Path

from costart.controller import Controller
from costart.eventlog.restore import restore
from costart.eventlog.snapshot_schema import SNAPSHOT_SCHEMA, encode_state
from costart.eventlog.snapshots import encode_world
from costart.replay.rebuild import rebuild
from costart.replay.rebuild_check import verify
from costart.store.replay_log import open_log
from tests.builders import USER, ManualClock

FIXTURE = Path(__file__).with_name("schema3_log")
SNAPSHOT_POSITIONS = [8, 16, 24, 32, 43, 51, 59, 67, 80]


def test_every_fixture_snapshot_is_of_schema_3_and_loads_to_the_replayed_world(
    store: Path,
) -> None:
    with open_log(store) as log:
        snapshots = log.snapshots.all()
        assert [s.position for s in snapshots] == SNAPSHOT_POSITIONS  # type: ignore[union-attr]
        for snapshot in snapshots:
            assert not isinstance(snapshot, Exception), snapshot
            assert snapshot.schema == 3
            loaded = snapshot.restorable_world()
            replayed = rebuild(log.source, until=snapshot.position)
            assert loaded == replayed
            assert encode_world(loaded) == encode_world(replayed)
            # Migrated, it is the World a compact snapshot of the same state gives...
            assert encode_state(loaded) == encode_state(replayed)
            # ...members sharing their group's spec and ids, as in the live state.
            for member in loaded.members.values():
                group = loaded.group_by_id(member.group_id)
                index = group.member_ids.index(member.id)
                assert member.spec is group.spec.members[index]
                assert member.group_id is group.id and member.id is group.member_ids[index]
        report = verify(log.source, log.snapshots, log_hash_at=log.record_hash)
        assert report.ok, report.divergence
        assert report.snapshots_checked == len(SNAPSHOT_POSITIONS)


def test_a_controller_restores_from_the_schema_3_snapshot_and_writes_compact_ones(
    store: Path,
) -> None:
    with open_log(store) as log:
        replayed = rebuild(log.source)
        restored, snapshot, skipped = restore(log.snapshots, log.source)
    assert skipped == [] and snapshot is not None and snapshot.schema == 3
    assert snapshot.position == SNAPSHOT_POSITIONS[-1] == replayed.position
    assert encode_world(restored) == encode_world(replayed)
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
        report = verify(log.source, log.snapshots, log_hash_at=log.record_hash)
    assert report.ok, report.divergence
    assert report.snapshots_checked == len(SNAPSHOT_POSITIONS) + 1
