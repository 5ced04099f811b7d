"""`replay verify` reports the first divergence with its position, aggregate and field."""

from __future__ import annotations

from pathlib import Path

import msgspec
from eventsourcing.popo import POPOAggregateRecorder
from rich.console import Console

from costart.cli.demo import run_demo
from costart.replay.rebuild import rebuild
from costart.replay.source import RecorderSource
from costart.replay.verify import verify
from costart.store.snapshots import SnapshotStore

ROOT = Path(__file__).resolve().parents[2]


def _demo(tmp_path):
    console = Console(file=(tmp_path / "out.txt").open("w"))
    return run_demo(
        ROOT / "scenarios" / "rl-post-training.toml", console, env={"COSTART_SNAPSHOT_EVERY": "5"}
    )


def test_a_clean_log_verifies(tmp_path):
    controller = _demo(tmp_path)
    report = verify(RecorderSource(controller.recorder), controller.snapshots_store)
    assert report.ok, report.divergence
    assert report.events == controller.recorder.max_notification_id()
    assert report.snapshots_checked == len(controller.snapshots_store.positions()) >= 3


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

    report = verify(RecorderSource(controller.recorder), controller.snapshots_store, check)
    assert report.divergence.position == 4 and report.divergence.aggregate == "log"
