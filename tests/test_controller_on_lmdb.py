"""The Controller on the LMDB store by configuration alone: commands, restart from the
newest snapshot plus the tail, snapshots tied to the log's hash chain."""

from __future__ import annotations

from pathlib import Path

from eventsourcing.persistence import StoredEvent
from rich.console import Console

from costart.cli.walkthrough import run_demo
from costart.controller import Controller
from costart.eventlog.codec import canonical_encode
from costart.eventlog.snapshot_schema import SNAPSHOT_SCHEMA, encode_state
from costart.eventlog.snapshots import SNAPSHOT_STREAM_ID, SNAPSHOT_TOPIC, Snapshot, encode_world
from costart.replay.rebuild import rebuild
from costart.replay.rebuild_check import verify
from costart.replay.source import RecorderSource
from costart.store import verify_log
from tests.builders import ManualClock, a_group, full_placement, ready

ROOT = Path(__file__).resolve().parents[1]


def lmdb_env(path: Path, **extra: str) -> dict[str, str]:
    return {"PERSISTENCE_MODULE": "costart.store", "COSTART_LMDB_PATH": str(path), **extra}


def test_the_demo_runs_on_lmdb_and_its_log_verifies(tmp_path):
    env = lmdb_env(tmp_path / "store", COSTART_SNAPSHOT_EVERY="6")
    controller = run_demo(
        ROOT / "scenarios" / "rl-post-training.toml",
        Console(file=(tmp_path / "o").open("w")),
        env=env,
    )
    assert controller.group("grpo-run-42").status == "SUCCEEDED"
    assert verify_log(tmp_path / "store").ok
    report = verify(RecorderSource(controller.recorder), controller.session.snapshots_store)
    assert report.ok and report.snapshots_checked >= 4
    snapshot = controller.session.snapshots_store.read(
        controller.session.snapshots_store.positions()[-1]
    )
    assert snapshot.log_hash == controller.recorder.record_hash(snapshot.position)
    controller.close()


def test_a_new_controller_on_the_same_store_restores_and_carries_on(tmp_path):
    env = lmdb_env(tmp_path / "store", COSTART_SNAPSHOT_EVERY="3")
    spec = a_group().with_member("a", claims=("c",)).with_member("b", replicas=2).build()
    first = Controller(env=env, clock=ManualClock())
    first.submit(spec)
    first.apply_decisions([full_placement(spec)])
    live = encode_world(first.world)
    first.close()
    second = Controller(env=env, clock=ManualClock())
    assert encode_world(second.world) == live
    ready(second, "g1/a", "c")
    assert second.may_start("g1/b")
    assert encode_world(rebuild(RecorderSource(second.recorder))) == encode_world(second.world)
    second.close()


def test_restoring_on_lmdb_reads_only_the_newest_snapshot_and_checks_its_bytes_once(tmp_path):
    env = lmdb_env(tmp_path / "store", COSTART_SNAPSHOT_EVERY="2")
    spec = a_group().with_member("a", claims=("c",)).with_member("b", replicas=2).build()
    controller = Controller(env=env, clock=ManualClock())
    controller.submit(spec)
    controller.apply_decisions([full_placement(spec)])
    ready(controller, "g1/a", "c")
    store, source = controller.session.snapshots_store, RecorderSource(controller.recorder)
    taken = store.positions()
    assert len(taken) >= 2
    reads: list[int] = []
    select = store.recorder.select_events

    def counting(*args, **kwargs):
        records = select(*args, **kwargs)
        reads.append(len(records))
        return records

    store.recorder.select_events = counting  # type: ignore[method-assign]
    found, world, skipped = store.newest_valid()
    assert found is not None and found.position == taken[-1] and skipped == [] and reads == [1]
    assert world is not None and encode_world(world) == encode_world(controller.world)
    # A snapshot whose own checksum is wrong but whose record the store checksummed: the
    # store verified its bytes as it read them, so restoring does not hash them again;
    # `replay verify` checks both and names it.
    at = next(p for p in range(controller.world.position, 0, -1) if p not in taken)
    rebuilt = rebuild(source, until=at)
    mislabelled = Snapshot(at, bytes(32), encode_state(rebuilt), schema=SNAPSHOT_SCHEMA)
    store.recorder.insert_events(
        [StoredEvent(SNAPSHOT_STREAM_ID, at, SNAPSHOT_TOPIC, canonical_encode(mislabelled))]
    )
    found, world, skipped = store.newest_valid(at_or_before=at)
    assert found == mislabelled and world is not None
    assert encode_world(world) == encode_world(rebuilt)
    report = verify(source, store)
    assert report.divergence is not None
    assert (report.divergence.position, report.divergence.field) == (at, "checksum")
    controller.close()
