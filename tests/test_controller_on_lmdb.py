"""The Controller on the LMDB store by configuration alone: commands, restart from the
newest snapshot plus the tail, snapshots tied to the log's hash chain."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from costart.app import Controller
from costart.cli.demo import run_demo
from costart.replay.rebuild import rebuild
from costart.replay.source import RecorderSource
from costart.replay.verify import verify
from costart.store import verify_log
from costart.store.snapshots import encode_world
from tests.builders import ManualClock, a_group, full_placement

ROOT = Path(__file__).resolve().parents[1]


def lmdb_env(path: Path, **extra: str) -> dict[str, str]:
    return {"PERSISTENCE_MODULE": "costart.store", "COSTART_LMDB_PATH": str(path), **extra}


def test_the_demo_runs_on_lmdb_and_its_log_verifies(tmp_path):
    env = lmdb_env(tmp_path / "store", COSTART_SNAPSHOT_EVERY="6")
    controller = run_demo(
        ROOT / "scenarios" / "rl-post-training.toml", Console(file=(tmp_path / "o").open("w")), env
    )
    assert controller.group("grpo-run-42").status == "SUCCEEDED"
    assert verify_log(tmp_path / "store").ok
    report = verify(RecorderSource(controller.recorder), controller.snapshots_store)
    assert report.ok and report.snapshots_checked >= 4
    snapshot = controller.snapshots_store.read(controller.snapshots_store.positions()[-1])
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
    second.claim_ready("g1/a", "c")
    assert second.may_start("g1/b")
    assert encode_world(rebuild(RecorderSource(second.recorder))) == encode_world(second.world)
    second.close()
