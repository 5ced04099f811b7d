"""`replay verify` reports the first divergence with its position, aggregate and field."""

from __future__ import annotations

import hashlib
from pathlib import Path

import msgspec
from eventsourcing.persistence import StoredEvent
from eventsourcing.popo import POPOAggregateRecorder
from rich.console import Console

from costart.cli.walkthrough import run_demo
from costart.eventlog.codec import canonical_encode
from costart.eventlog.snapshot_schema import SNAPSHOT_SCHEMA
from costart.eventlog.snapshots import SNAPSHOT_STREAM_ID, SNAPSHOT_TOPIC, Snapshot, SnapshotStore
from costart.replay.rebuild import rebuild
from costart.replay.rebuild_check import verify
from costart.replay.source import RecorderSource

ROOT = Path(__file__).resolve().parents[2]


def _demo(tmp_path):
    console = Console(file=(tmp_path / "out.txt").open("w"))
    return run_demo(
        ROOT / "scenarios" / "rl-post-training.toml", console, env={"COSTART_SNAPSHOT_EVERY": "5"}
    )


def test_a_clean_log_verifies(tmp_path):
    controller = _demo(tmp_path)
    report = verify(RecorderSource(controller.recorder), controller.session.snapshots_store)
    assert report.ok, report.divergence
    assert report.events == controller.recorder.max_notification_id()
    assert report.snapshots_checked == len(controller.session.snapshots_store.positions()) >= 3


def test_a_snapshot_that_disagrees_with_the_log_is_named_by_field(tmp_path):
    controller = _demo(tmp_path)
    source = RecorderSource(controller.recorder)
    forged = SnapshotStore(POPOAggregateRecorder())
    world = rebuild(source, until=12)
    group = world.group_named("grpo-run-42")
    world.groups[str(group.id)] = msgspec.structs.replace(group, attempt=7)
    forged.write(world)
    report = verify(source, forged)
    assert not report.ok
    assert (report.divergence.position, report.divergence.aggregate, report.divergence.field) == (
        12,
        "group grpo-run-42",
        "attempt",
    )
    assert "7" in report.divergence.detail


class _Tampered:
    """A source whose event at ``position`` is replaced by a rule-breaking one."""

    def __init__(self, source, position):
        self.source, self.position = source, position

    def read_events(self, after=0, until=None):
        for position, event in self.source.read_events(after, until):
            if position == self.position:
                yield (
                    position,
                    msgspec.structs.replace(event, originator_version=event.originator_version + 5),
                )
            else:
                yield position, event


def test_an_event_that_breaks_the_state_machine_is_reported_at_its_position(tmp_path):
    controller = _demo(tmp_path)
    report = verify(_Tampered(RecorderSource(controller.recorder), 9))
    assert not report.ok and report.divergence.position == 9
    assert "version" in report.divergence.detail


def test_an_integrity_failure_stops_verification_first(tmp_path):
    controller = _demo(tmp_path)

    class ChainBroken(Exception):
        position = 4

    def check():
        raise ChainBroken("record 4: previous hash does not match record 3")

    report = verify(RecorderSource(controller.recorder), controller.session.snapshots_store, check)
    assert report.divergence.position == 4 and report.divergence.aggregate == "log"


def _older_schema_snapshot(world, schema: int) -> Snapshot:
    """What a release of ``schema`` wrote: members without per-task state (schema 3)."""
    if schema < 3:
        members = {
            k: msgspec.structs.replace(m, attempt=0, tasks=[]) for k, m in world.members.items()
        }
        world = msgspec.structs.replace(world, members=members)
    state = canonical_encode(world)
    return Snapshot(
        world.position, hashlib.blake2b(state, digest_size=32).digest(), state, None, schema
    )


def _store_with(snapshot: Snapshot) -> SnapshotStore:
    store = SnapshotStore(POPOAggregateRecorder())
    store.recorder.insert_events(
        [
            StoredEvent(
                originator_id=SNAPSHOT_STREAM_ID,
                originator_version=snapshot.position,
                topic=SNAPSHOT_TOPIC,
                state=canonical_encode(snapshot),
            )
        ]
    )
    return store


def test_a_snapshot_of_an_older_schema_is_compared_as_this_release_reads_it(tmp_path):
    controller = _demo(tmp_path)
    source = RecorderSource(controller.recorder)
    snapshot = _older_schema_snapshot(rebuild(source, until=12), schema=1)
    report = verify(source, _store_with(snapshot))
    assert report.ok and report.snapshots_checked == 1, report.divergence


def test_a_snapshot_of_an_older_schema_that_disagrees_is_named_by_field(tmp_path):
    controller = _demo(tmp_path)
    source = RecorderSource(controller.recorder)
    world = rebuild(source, until=12)
    group = world.group_named("grpo-run-42")
    group.releases += 1
    report = verify(source, _store_with(_older_schema_snapshot(world, schema=1)))
    assert report.divergence is not None
    assert (report.divergence.position, report.divergence.field) == (12, "releases")


def test_a_snapshot_of_an_unknown_schema_is_not_restored(tmp_path):
    controller = _demo(tmp_path)
    world = rebuild(RecorderSource(controller.recorder), until=12)
    store = _store_with(_older_schema_snapshot(world, schema=SNAPSHOT_SCHEMA + 1))
    snapshot, restored, skipped = store.newest_valid()
    assert snapshot is None and restored is None
    assert [e.position for e in skipped] == [12]
    assert "schema" in str(skipped[0])


def test_a_snapshot_whose_runtime_history_is_not_its_logs_is_named_as_such(tmp_path):
    controller = _demo(tmp_path)
    source = RecorderSource(controller.recorder)
    world = rebuild(source)
    [(key, entry)] = world.runtime_history.keys.items()  # the demo's trainer succeeded
    entry.samples[0] += 1
    forged = SnapshotStore(POPOAggregateRecorder())
    forged.write(world)
    report = verify(source, forged)
    assert not report.ok
    assert (report.divergence.aggregate, report.divergence.field) == (
        "runtime history",
        f"{key}.samples[0]",
    )
