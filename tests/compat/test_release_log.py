"""A log written by an earlier release still replays and verifies (docs/design.md §8).

``release_log/`` holds a store written by the release before structs left their
defaults out of the encoding (made by ``write_release_log`` at the commit that added it). Every later release
must open it read-only, verify its chain and every snapshot against a replay, rebuild
the same state, and carry on writing to a copy of it.
"""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from costart.cli.main import app
from costart.controller import Controller
from costart.replay.rebuild import rebuild
from costart.replay.rebuild_check import verify
from costart.store import verify_log
from costart.store.replay_log import open_log
from tests.builders import USER, ManualClock

FIXTURE = Path(__file__).with_name("release_log")
EVENTS = 63
SNAPSHOTS = 7


def test_the_release_log_verifies_with_replay_verify(store: Path) -> None:
    result = CliRunner().invoke(app, ["replay", "verify", "--log", str(store)])
    assert result.exit_code == 0, result.output
    assert f"ok: {EVENTS} events" in result.output
    assert f"{SNAPSHOTS} snapshots" in result.output


def test_the_release_log_rebuilds_the_state_it_recorded(store: Path) -> None:
    assert verify_log(store).ok
    with open_log(store) as log:
        report = verify(log.source, log.snapshots, log_hash_at=log.record_hash)
        assert report.ok, report.divergence
        assert (report.events, report.snapshots_checked) == (EVENTS, SNAPSHOTS)
        world = rebuild(log.source)
    statuses = {g.name: g.status for g in world.groups_in_order()}
    assert statuses == {
        "g1": "RUNNING",
        "g2": "CANCELLED",
        "g3": "PENDING",
        "grpo-run-42": "SUCCEEDED",
    }
    rollout = world.member_named(world.group_named("g1"), "rollout")
    assert (rollout.status, rollout.restarts, len(rollout.assignments)) == ("RUNNING", 1, 3)
    assert world.node_status == {"spare-n002": "down"}


def test_a_controller_carries_on_writing_to_the_release_log(store: Path) -> None:
    env = {"PERSISTENCE_MODULE": "costart.store", "COSTART_LMDB_PATH": str(store)}
    controller = Controller(env=env, clock=ManualClock())
    assert controller.world.position == EVENTS
    controller.cancel("g1", actor=USER)
    assert controller.group("g1").status == "CANCELLED"
    controller.snapshot_now()
    controller.close()
    assert verify_log(store).ok
    with open_log(store) as log:
        report = verify(log.source, log.snapshots, log_hash_at=log.record_hash)
    assert report.ok, report.divergence
    assert report.snapshots_checked == SNAPSHOTS + 1
