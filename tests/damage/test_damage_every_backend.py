"""The damage classes that apply on every backend (ADR 0028), on LMDB and on PostgreSQL:
a damaged or deleted newest snapshot falls back to an older one with a warning naming its
position (the log is intact: the state is the same); a missing or altered event stops
startup with an error naming its position (on PostgreSQL also an altered row that still
decodes: rows carry costart's checksum, ADR 0040); a log that lost its tail is refused by what
was built past it (the newest snapshot, the views)."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest
import structlog

from costart.cli.exits import EXIT_DAMAGED, EXIT_ERROR, EXIT_TAIL_LOST
from costart.domain.spec import parse_spec
from costart.eventlog.codec import canonical_decode, canonical_encode, decode_event
from costart.eventlog.errors import CorruptRecordError, DamagedStoreError, Defect, LogTailLostError
from costart.eventlog.snapshots import Snapshot, encode_world
from tests.contract.stores import Store
from tests.damage import classes
from tests.damage.base_store import TAIL_GROUP, cut_log
from tests.damage.demo_store import (
    ON_POSTGRESQL,
    ROOT,
    cli,
    closed,
    controller_of,
    row_of,
    set_state,
    sql,
)


def damage_newest_snapshot(store: Store) -> None:
    if store.name == "lmdb":
        classes.flip_newest_snapshot(Path(store.location))
    else:
        sql(
            store,
            "UPDATE costart_snapshots SET state = set_byte(state, 100, get_byte(state, 100) # 1) "
            "WHERE originator_version = (SELECT max(originator_version) FROM costart_snapshots)",
        )


def delete_newest_snapshot(store: Store) -> None:
    if store.name == "lmdb":
        classes.delete_newest_snapshot(Path(store.location))
    else:
        sql(
            store,
            "DELETE FROM costart_snapshots WHERE originator_version = "
            "(SELECT max(originator_version) FROM costart_snapshots)",
        )


@pytest.mark.parametrize("how", ["damaged", "deleted"])
def test_the_newest_snapshot_gone_bad_falls_back_to_an_older_one_loudly(store, demo, how):
    (damage_newest_snapshot if how == "damaged" else delete_newest_snapshot)(store)
    with structlog.testing.capture_logs() as logs:
        restarted = controller_of(store)
    try:
        assert encode_world(restarted.world) == demo.state  # the log is intact: the same
        # From the snapshot before it, not from the start of the log.
        assert restarted.session._last_snapshot_position == demo.previous_snapshot
    finally:
        closed(restarted)
    skipped = [e for e in logs if e["event"] == "snapshot skipped"]
    if how == "damaged":  # named; a deleted one is simply not there
        assert [e["position"] for e in skipped] == [demo.newest_snapshot]
        assert skipped[0]["log_level"] == "warning"


def test_a_missing_event_stops_startup_naming_its_position(store, demo):
    position = demo.newest_snapshot + 1
    if store.name == "lmdb":
        classes.delete_event(position)(Path(store.location))
    else:
        sql(store, f"DELETE FROM costart_events WHERE notification_id = {position}")
    with pytest.raises(CorruptRecordError) as error:
        controller_of(store)
    assert error.value.position == position and error.value.defect is Defect.GAP
    assert f"at notification id {position}" in str(error.value)


def test_an_altered_event_stops_startup_naming_its_position(store, demo):
    position = demo.newest_snapshot + 1
    if store.name == "lmdb":
        classes.flip_event(position)(Path(store.location))
    else:
        sql(
            store,
            "UPDATE costart_events SET state = '\\x00ff'::bytea "
            f"WHERE notification_id = {position}",
        )
    with pytest.raises(DamagedStoreError) as error:
        controller_of(store)
    assert isinstance(error.value, CorruptRecordError) and error.value.position == position


def cut_tail(store: Store, keep: int) -> None:
    if store.name == "lmdb":
        cut_log(Path(store.location), keep)
    else:
        sql(store, f"DELETE FROM costart_events WHERE notification_id > {keep}")


def _snapshot_at_the_end(store: Store) -> int:
    controller = controller_of(store)
    try:
        return controller.snapshot_now()
    finally:
        closed(controller)


def test_a_snapshot_past_the_end_of_the_log_refuses_the_controller(store, demo):
    end = _snapshot_at_the_end(store)
    gc.collect()
    if store.name == "lmdb":
        # Only the last event goes: the snapshot taken at it stays, ahead of the log.
        classes.delete_event(end)(Path(store.location))
    else:
        cut_tail(store, end - 1)
    with pytest.raises(LogTailLostError) as error:
        controller_of(store)
    assert str(error.value).startswith(f"log ends at {end - 1}, the snapshot was taken at {end}")


def test_views_built_past_the_end_of_the_log_refuse_the_cli(store, demo, tmp_path):
    env = {**os.environ, "COSTART_VIEWS_DIR": str(tmp_path / "views"), "PYTHONPATH": str(ROOT)}
    args = [sys.executable, "-m", "costart.cli.main", "--store", store.location, "get", "groups"]
    built = subprocess.run(args, env=env, capture_output=True, text=True, check=False)
    assert built.returncode == 0, built.stderr  # views built to the end
    cut_tail(store, demo.end - 3)
    refused = subprocess.run(args, env=env, capture_output=True, text=True, check=False)
    assert refused.returncode == EXIT_TAIL_LOST, refused.stderr
    expected = f"error: log ends at {demo.end - 3}, the views were built to {demo.end}"
    assert expected in refused.stderr
    assert "the log lost its tail" in refused.stderr


# PostgreSQL rows carry costart's checksum (ADR 0040): an altered row that still decodes,
# which only the checksum can tell from a written one, is found on every read path.
def alter_event_decodably(store: Store, position: int) -> None:
    """Move the event at ``position`` one nanosecond later: it still decodes and folds."""
    where = f"notification_id = {position}"
    row = row_of(store, "costart_events", where)
    event = decode_event(row["topic"], bytes(row["state"]))
    altered = canonical_encode(msgspec.structs.replace(event, at_ns=event.at_ns + 1))
    assert decode_event(row["topic"], altered) != event
    set_state(store, "costart_events", where, altered)


@ON_POSTGRESQL
def test_an_altered_event_that_still_decodes_stops_startup_naming_its_position(store, demo):
    position = demo.newest_snapshot + 1
    alter_event_decodably(store, position)
    with pytest.raises(CorruptRecordError) as error:
        controller_of(store)
    assert error.value.position == position and error.value.defect is Defect.CHECKSUM
    assert str(error.value) == (
        f"checksum mismatch at notification id {position} in log 'costart_events': the row was altered or moved"
    )


def _damage_row(store: Store, how: str, position: int) -> None:
    where = f"notification_id = {position}"
    if how == "altered, still decodes":
        alter_event_decodably(store, position)
    elif how == "altered, undecodable":
        set_state(store, "costart_events", where, b"\x00\xff")
    elif how == "checksum removed":
        _forget_checksums(store, where)
    else:
        sql(store, f"DELETE FROM costart_events WHERE {where}")


ROW_DAMAGE = ["altered, still decodes", "altered, undecodable", "checksum removed", "deleted"]


@ON_POSTGRESQL
@pytest.mark.parametrize("how", ROW_DAMAGE)
def test_a_damaged_event_row_fails_verify_and_the_views_naming_its_position(
    store, demo, tmp_path, how
):
    _damage_row(store, how, 3)
    verified = cli(store, tmp_path, "replay", "verify")
    assert verified.returncode == EXIT_ERROR, verified.stdout + verified.stderr
    assert "DIVERGENCE at position 3 (costart_events)" in verified.stderr
    listed = cli(store, tmp_path, "get", "groups")  # the views are built from the log
    assert listed.returncode == EXIT_DAMAGED, listed.stderr
    assert "at notification id 3 in log" in listed.stderr


@ON_POSTGRESQL
def test_an_altered_snapshot_that_still_decodes_falls_back_loudly(store, demo):
    where = f"originator_version = {demo.newest_snapshot}"
    row = row_of(store, "costart_snapshots", where)
    snapshot = canonical_decode(bytes(row["state"]), Snapshot)
    # A log hash PostgreSQL keeps no chain to compare with: only the row checksum sees it.
    forged = msgspec.structs.replace(snapshot, log_hash=bytes(16))
    set_state(store, "costart_snapshots", where, canonical_encode(forged))
    with structlog.testing.capture_logs() as logs:
        restarted = controller_of(store)
    try:
        assert encode_world(restarted.world) == demo.state
        assert restarted.session._last_snapshot_position == demo.previous_snapshot
    finally:
        closed(restarted)
    skipped = [e for e in logs if e["event"] == "snapshot skipped"]
    assert [e["position"] for e in skipped] == [demo.newest_snapshot]


def _forget_checksums(store: Store, where: str) -> None:
    sql(store, f"UPDATE costart_events SET checksum = NULL WHERE {where}")


@ON_POSTGRESQL
def test_rows_written_before_the_checksum_column_existed_are_read_unchecked(store, demo):
    # A log of an earlier release: the column is added on open, its rows are NULL.
    sql(store, "ALTER TABLE costart_events DROP COLUMN checksum")
    sql(store, "ALTER TABLE costart_snapshots DROP COLUMN checksum")
    controller = controller_of(store)
    try:
        assert encode_world(controller.world) == demo.state
        controller.submit(parse_spec(TAIL_GROUP, "toml"))  # new rows carry a checksum
        end, state = controller.world.position, encode_world(controller.world)
    finally:
        closed(controller)
    new_row = row_of(store, "costart_events", f"notification_id = {end}")
    assert new_row["checksum"] is not None
    legacy = row_of(store, "costart_events", f"notification_id = {demo.end}")
    assert legacy["checksum"] is None
    restarted = controller_of(store)  # legacy rows, then checked ones: read in full
    try:
        assert encode_world(restarted.world) == state
    finally:
        closed(restarted)


@ON_POSTGRESQL
def test_a_checksum_removed_after_checksummed_rows_is_damage_not_a_legacy_row(store, demo):
    position = demo.newest_snapshot + 1
    _forget_checksums(store, f"notification_id = {position}")
    with pytest.raises(CorruptRecordError) as error:
        controller_of(store)
    assert error.value.position == position and error.value.defect is Defect.CHECKSUM
    assert "checksum missing after the first checksummed row (1)" in str(error.value)


@ON_POSTGRESQL
def test_a_legacy_prefix_of_rows_without_checksums_is_accepted(store, demo):
    _forget_checksums(store, f"notification_id <= {demo.newest_snapshot + 1}")
    restarted = controller_of(store)
    try:
        assert encode_world(restarted.world) == demo.state
    finally:
        closed(restarted)
