"""A log whose run tables were written before they could name secrets still replays.

``run_table_log/`` holds a store written by ``write_run_table_log`` at the commit before
`RunSpec.secrets` existed: one group (``scenarios/live-rl.toml``) with run tables
(``env``, ``cwd``, ``port``, ``file`` probes), placed, its claims READY and its tasks
started, snapshots every 4 events. Every later release must verify its chain and each
snapshot against a replay, read the run tables with no secrets, keep their bytes
(adding a defaulted field changes no encoding, ADR 0004 and 0024), and carry on
writing to a copy.
"""

from __future__ import annotations

from pathlib import Path

from costart.controller import Controller
from costart.domain import events as ev
from costart.eventlog.codec import canonical_encode
from costart.replay.rebuild import rebuild
from costart.replay.rebuild_check import verify
from costart.store import verify_log
from costart.store.replay_log import open_log
from tests.builders import USER, ManualClock

FIXTURE = Path(__file__).with_name("run_table_log")
EVENTS = 17
SNAPSHOTS = 5


def test_the_run_table_log_verifies_and_rebuilds(store: Path) -> None:
    assert verify_log(store).ok
    with open_log(store) as log:
        report = verify(log.source, log.snapshots, log_hash_at=log.record_hash)
        assert report.ok, report.divergence
        assert (report.events, report.snapshots_checked) == (EVENTS, SNAPSHOTS)
        world = rebuild(log.source)
        submitted = next(e for _, e in log.source.read_events() if isinstance(e, ev.GroupSubmitted))
    group = world.group_named("rl-live")
    assert group.status == "RUNNING"
    runs = {m.name: m.run for m in submitted.spec.members}
    assert all(run is not None and run.secrets == () for run in runs.values())
    trainer = runs["trainer"]
    assert trainer is not None
    assert dict(trainer.env)["TRAIN_STEPS"] == "8"
    assert trainer.cwd == "scenarios/live"
    # Re-encoding the old event gives its stored bytes: a field at its default is left out.
    with open_log(store) as log:
        stored = [r for r in log.source.recorder.select_notifications(1, EVENTS)]
    first = next(r for r in stored if r.topic.endswith(":GroupSubmitted"))
    assert canonical_encode(submitted) == first.state


def test_a_controller_carries_on_writing_to_the_run_table_log(store: Path) -> None:
    env = {"PERSISTENCE_MODULE": "costart.store", "COSTART_LMDB_PATH": str(store)}
    controller = Controller(env=env, clock=ManualClock())
    assert controller.world.position == EVENTS
    controller.cancel("rl-live", actor=USER)
    assert controller.group("rl-live").status in {"CANCELLING", "CANCELLED"}
    controller.snapshot_now()
    controller.close()
    with open_log(store) as log:
        report = verify(log.source, log.snapshots, log_hash_at=log.record_hash)
    assert report.ok, report.divergence
