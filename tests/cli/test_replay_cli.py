"""`costart replay` through the real entry point, on a copy of a log: clean logs verify;
a flipped byte, a dropped record and a tampered snapshot are caught at their positions."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import lmdb
import msgspec
import pytest

from costart.cli.replay_cmd import VERIFY_EXITS
from costart.controller import Controller
from costart.eventlog.event_reading import RecorderSource
from costart.eventlog.snapshots import SnapshotStore
from costart.replay.rebuild import rebuild
from costart.store.lmdbenv import log_db_name
from costart.store.record_layout import pack_u64
from costart.store.recorders import LmdbAggregateRecorder
from tests.cli.run_cli import costart

EVENTS = "costart_events"


@pytest.fixture(scope="module")
def demo_log(tmp_path_factory) -> Path:
    """The demo's log (with snapshots), made once; tests work on copies of it."""
    work = tmp_path_factory.mktemp("demo")
    done = costart("--store", str(work / "store"), "demo", "--walkthrough")
    assert done.returncode == 0, done.stderr
    return work / "store"


@pytest.fixture
def log_copy(demo_log, tmp_path) -> Path:
    copy = tmp_path / "copy"
    shutil.copytree(demo_log, copy)
    return copy


def test_the_demo_log_verifies_clean(demo_log):
    done = costart("--store", str(demo_log), "replay", "verify")
    assert done.returncode == 0, done.stderr
    assert "47 events" in done.stdout and "snapshots byte-identical" in done.stdout


def test_the_log_option_opens_the_same_log(demo_log):
    by_log = costart("replay", "verify", "--log", str(demo_log))
    by_store = costart("--store", str(demo_log), "replay", "verify")
    assert by_log.returncode == 0, by_log.stderr
    assert by_log.stdout == by_store.stdout


def test_a_store_no_backend_takes_is_refused_naming_it(tmp_path):
    for args in (("get", "groups"), ("replay", "verify")):
        done = costart("--store", "mysql://db/x", *args, cwd=tmp_path)
        assert done.returncode == 2, done.stderr
        assert "'mysql://db/x': one store backend must take it, not none" in done.stderr
    assert list(tmp_path.iterdir()) == []  # nothing made for it


def test_a_flipped_byte_is_caught_at_its_position(log_copy):
    env = lmdb.open(str(log_copy), max_dbs=16)
    db = env.open_db(log_db_name(EVENTS))
    with env.begin(write=True, db=db) as txn:
        value = bytearray(txn.get(pack_u64(17)))
        value[20] ^= 0x01
        txn.put(pack_u64(17), bytes(value))
    env.close()
    done = costart("--store", str(log_copy), "replay", "verify")
    assert done.returncode == 1
    assert "DIVERGENCE at position 17" in done.stderr and "checksum" in done.stderr


def test_a_dropped_record_is_caught_at_its_position(log_copy):
    env = lmdb.open(str(log_copy), max_dbs=16)
    db = env.open_db(log_db_name(EVENTS))
    with env.begin(write=True, db=db) as txn:
        txn.delete(pack_u64(9))
    env.close()
    done = costart("--store", str(log_copy), "replay", "verify")
    assert done.returncode == 1
    assert "DIVERGENCE at position 9" in done.stderr and "missing" in done.stderr


def test_a_tampered_snapshot_is_caught_at_its_position_naming_the_field(log_copy):
    """A snapshot that is well-formed and checksummed but disagrees with the log."""
    env = {
        "PERSISTENCE_MODULE": "costart.store",
        "COSTART_LMDB_PATH": str(log_copy),
        "COSTART_SNAPSHOT_EVERY": "0",
    }
    controller = Controller(env=env)
    world = rebuild(RecorderSource(controller.recorder), until=13)
    group = world.group_named("grpo-run-42")
    world.groups[str(group.id)] = msgspec.structs.replace(group, group_restarts=1)
    SnapshotStore(
        LmdbAggregateRecorder(controller.recorder.store, log_name="costart_snapshots")
    ).write(world)
    controller.close()
    done = costart("--store", str(log_copy), "replay", "verify")
    assert done.returncode == 1
    assert "DIVERGENCE at position 13: group grpo-run-42 group_restarts" in done.stderr


def test_forensics_commands_on_a_copy(log_copy, tmp_path):
    state = costart("--store", str(log_copy), "replay", "state", "--at", "12", "-o", "json")
    assert state.returncode == 0, state.stderr
    body = json.loads(state.stdout)
    assert body["position"] == 12 and body["groups"][0]["group"]["status"] == "PLACED"
    why = costart("--store", str(log_copy), "replay", "why", "grpo-run-42", "--at", "6s")
    assert why.returncode == 0 and "PLACED" in why.stdout
    page = tmp_path / "timeline.html"
    html = costart(
        "--store", str(log_copy), "replay", "timeline", "grpo-run-42", "--html", str(page)
    )
    assert html.returncode == 0 and page.read_text().startswith("<!DOCTYPE html>")
    diff = costart("--store", str(log_copy), "replay", "diff", "--from", "10", "--to", "20")
    assert diff.returncode == 0 and "barrier_released_attempt" in diff.stdout
    export = costart("--store", str(log_copy), "replay", "export")
    lines = export.stdout.splitlines()
    assert len(lines) == 47 and json.loads(lines[-1])["position"] == 47
    missing = costart("--store", str(log_copy), "replay", "why", "nope", "--at", "3s")
    assert missing.returncode == 4
    bad = costart("--store", str(log_copy), "replay", "state", "--at", "yesterday")
    assert bad.returncode == 1 and "bad point" in bad.stderr


def test_forensics_output_reads_as_sentences_with_whole_values(log_copy):
    def lines(*args: str) -> list[str]:
        done = costart("--store", str(log_copy), "replay", *args)
        assert done.returncode == 0, done.stderr
        return [line.rstrip() for line in done.stdout.splitlines()]

    # A fractional offset from the group's submission (at t+5s), and a sentence.
    assert lines("why", "grpo-run-42", "--at", "0.5s") == [
        "times: ISO-8601 UTC, and +offset from grpo-run-42's submission at t+5.0s",
        "grpo-run-42: PENDING at t+5.5s (+500ms) (last event MemberCreated)",
        "  no pend reason at that time",
        "No pend-reason changes up to then.",
    ]
    assert lines("diff", "--from", "10", "--to", "12") == [
        "times: ISO-8601 UTC, and +offset from the log's first event at t+5.0s",
        "position 10 at t+10s (+5.0s) -> position 12 at t+12s (+7.0s)",
        "member grpo-run-42/trainer claims.dataset: PENDING -> READY",
        "member grpo-run-42/trainer claims.gpus: PENDING -> READY",
        "member grpo-run-42/trainer status: PLACED -> READY",
        "member grpo-run-42/trainer version: 2 -> 4",
        "world clock_ns: t+10s -> t+12s",
        "world position: 10 -> 12",
    ]
    assert lines("diff", "--from", "10", "--to", "10")[-1] == "No field changed."
    # Lists and objects are walked: each changed value on its own line, never a whole array.
    placed = lines("diff", "--from", "3", "--to", "6")
    assert "member grpo-run-42/trainer tasks[0].status: - -> PLACED" in placed
    assert "member grpo-run-42/trainer assignments[3][1]: - -> b1-r1-n04" in placed
    assert all("{" not in line and "[0," not in line for line in placed), placed


def test_snapshot_on_demand(log_copy):
    done = costart("--store", str(log_copy), "snapshot")
    assert done.returncode == 0 and "snapshot at position 47" in done.stdout
    verify = costart("--store", str(log_copy), "replay", "verify")
    assert verify.returncode == 0, verify.stderr


def test_a_snapshot_from_another_log_is_not_tied_to_this_chain(log_copy, tmp_path):
    """Same state bytes, but the snapshot names another log's record hash."""
    env = {
        "PERSISTENCE_MODULE": "costart.store",
        "COSTART_LMDB_PATH": str(log_copy),
        "COSTART_SNAPSHOT_EVERY": "0",
    }
    controller = Controller(env=env)
    world = rebuild(RecorderSource(controller.recorder), until=29)
    SnapshotStore(
        LmdbAggregateRecorder(controller.recorder.store, log_name="costart_snapshots")
    ).write(world, log_hash=b"\x00" * 16)
    controller.close()
    done = costart("--store", str(log_copy), "replay", "verify")
    assert done.returncode == 1
    assert "DIVERGENCE at position 29: snapshot log_hash" in done.stderr


def _flip_record(store: Path) -> None:
    env = lmdb.open(str(store), max_dbs=16)
    db = env.open_db(log_db_name(EVENTS))
    with env.begin(write=True, db=db) as txn:
        value = bytearray(txn.get(pack_u64(17)))
        value[20] ^= 0x01
        txn.put(pack_u64(17), bytes(value))
    env.close()


def _not_a_store(store: Path) -> None:
    shutil.rmtree(store)
    store.mkdir()
    (store / "notes.txt").write_text("not a log\n")


def _cut_short(store: Path) -> None:
    with (store / "data.mdb").open("r+b") as data:
        data.truncate(8192)


VERIFY_CASES = {0: lambda store: None, 1: _flip_record, 2: _not_a_store, 7: _cut_short}


def test_verify_exit_codes_are_the_documented_table_and_each_happens(demo_log, tmp_path):
    assert set(VERIFY_CASES) == set(VERIFY_EXITS)  # a row without a case fails here
    helped = costart("replay", "verify", "--help").stdout
    said = " ".join(helped.replace("│", " ").split())
    for code, meaning in VERIFY_EXITS.items():
        assert f"{code}: {' '.join(meaning.split())}" in said, code
    for code, damage in VERIFY_CASES.items():
        store = tmp_path / f"case-{code}"
        shutil.copytree(demo_log, store)
        damage(store)
        done = costart("--store", str(store), "replay", "verify")
        assert done.returncode == code, (code, done.stderr)
        if code:
            assert len(done.stderr.splitlines()) == 1, done.stderr  # one line, no traceback
