"""Checksums and the hash chain catch corruption, and name the position."""

from __future__ import annotations

import itertools
import shutil
from pathlib import Path

import lmdb
import pytest
from eventsourcing.persistence import IntegrityError, StoredEvent

from costart.eventlog.errors import CorruptRecordError, Defect
from costart.store import (
    GENESIS,
    LmdbApplicationRecorder,
    iter_log,
    iter_verified,
    open_readonly,
    verify_log,
)
from costart.store.lmdbenv import MAX_DBS, log_db_name
from costart.store.record_layout import decode_record, encode_record, pack_u64

from .support import TempStores, batch, batch_originator

LOG = "stored_events"


def marker(position: int) -> bytes:
    return b"MARKER-%06d-PAYLOAD" % position


def fill(stores: TempStores, path: str, count: int = 20) -> None:
    """``count`` single-event batches whose state is ``marker(id)``, then close."""
    store = stores.open(path)
    recorder = LmdbApplicationRecorder(store)
    for i in range(1, count + 1):
        ids = recorder.insert_events(
            [StoredEvent(batch_originator(f"e{i}"), 1, "costart.test:Marked", marker(i))]
        )
        assert ids == [i]
    recorder.close()
    store.release()
    assert store.closed


def raw_env(path: str) -> lmdb.Environment:
    return lmdb.open(path, max_dbs=MAX_DBS, map_size=1 << 26)


def assert_corrupt_at(path: str, stores: TempStores, position: int, defect: Defect) -> None:
    store = stores.open(path)
    recorder = LmdbApplicationRecorder(store)
    try:
        # Notifications: everything before the bad record is still readable.
        assert len(recorder.select_notifications(1, position - 1)) == position - 1
        with pytest.raises(CorruptRecordError) as exc:
            recorder.select_notifications(None, 100)
        assert (exc.value.position, exc.value.defect, exc.value.log) == (position, defect, LOG)
        assert f"notification id {position}" in str(exc.value)
        # Full-log iteration raises at the same position.
        with pytest.raises(CorruptRecordError) as exc:
            list(iter_verified(recorder))
        assert (exc.value.position, exc.value.defect) == (position, defect)
        # The report names it first.
        report = verify_log(recorder)
        assert not report.ok
        assert (report.problems[0].position, report.problems[0].defect) == (position, defect)
    finally:
        recorder.close()


def test_flipped_byte_in_data_file_is_a_checksum_mismatch_at_its_position(
    stores: TempStores,
) -> None:
    path = stores.path()
    fill(stores, path)
    data_file = Path(path) / "data.mdb"
    data = bytearray(data_file.read_bytes())
    needle = marker(13)
    at = data.find(needle)
    assert at >= 0
    while at >= 0:  # copy-on-write may have left stale copies in free pages too
        data[at + 7] ^= 0x01
        at = data.find(needle, at + 1)
    data_file.write_bytes(bytes(data))

    assert_corrupt_at(path, stores, 13, Defect.CHECKSUM)
    store = stores.open(path)
    recorder = LmdbApplicationRecorder(store)
    with pytest.raises(CorruptRecordError) as exc:
        recorder.select_events(batch_originator("e13"))
    assert exc.value.position == 13
    # The other records' events are intact.
    assert recorder.select_events(batch_originator("e12"))[0].state == marker(12)
    report = verify_log(recorder)
    assert [(p.position, p.defect) for p in report.problems] == [(13, Defect.CHECKSUM)]
    recorder.close()


@pytest.mark.parametrize(
    ("offset", "defect"),
    [
        (1, Defect.CHECKSUM),  # the id
        (10, Defect.CHECKSUM),  # inside the originator id
        (-19, Defect.CHECKSUM),  # last byte of `prev`
        (-1, Defect.CHECKSUM),  # last byte of the checksum itself
        (-17, Defect.FORMAT),  # the checksum's msgpack length byte
        (0, Defect.FORMAT),  # the array header
    ],
)
def test_flipped_byte_in_record_value_via_raw_lmdb_write(
    stores: TempStores, offset: int, defect: Defect
) -> None:
    path = stores.path()
    fill(stores, path)
    env = raw_env(path)
    db = env.open_db(log_db_name(LOG))
    with env.begin(write=True, db=db) as txn:
        value = bytearray(txn.get(pack_u64(7)) or b"")
        value[offset] ^= 0x40
        txn.put(pack_u64(7), bytes(value))
    env.close()
    assert_corrupt_at(path, stores, 7, defect)


def test_mangled_envelope_is_a_format_error(stores: TempStores) -> None:
    path = stores.path()
    fill(stores, path)
    env = raw_env(path)
    db = env.open_db(log_db_name(LOG))
    with env.begin(write=True, db=db) as txn:
        txn.put(pack_u64(5), (txn.get(pack_u64(5)) or b"")[:-20])
    env.close()
    assert_corrupt_at(path, stores, 5, Defect.FORMAT)


def test_replaced_record_breaks_the_chain(stores: TempStores) -> None:
    path = stores.path()
    fill(stores, path)
    env = raw_env(path)
    db = env.open_db(log_db_name(LOG))
    with env.begin(write=True, db=db) as txn:
        old = decode_record(txn.get(pack_u64(9)) or b"", LOG, 9)
        event = (b"", old.originator_id, old.originator_version, old.topic, b"forged")
        # A self-consistent record (valid checksum) that does not link to #8.
        forged, _ = encode_record(9, event, bytes(16))
        txn.put(pack_u64(9), forged)
    env.close()
    assert_corrupt_at(path, stores, 9, Defect.CHAIN)
    report = verify_log(path)
    # #9 no longer links to #8, and #10 no longer links to #9.
    assert [(p.position, p.defect) for p in report.problems] == [
        (9, Defect.CHAIN),
        (10, Defect.CHAIN),
    ]


def test_deleted_record_is_a_gap(stores: TempStores) -> None:
    path = stores.path()
    fill(stores, path)
    env = raw_env(path)
    db = env.open_db(log_db_name(LOG))
    with env.begin(write=True, db=db) as txn:
        txn.delete(pack_u64(4))
    env.close()
    assert_corrupt_at(path, stores, 4, Defect.GAP)
    problems = verify_log(path).problems
    assert (problems[0].position, problems[0].defect) == (4, Defect.GAP)
    assert any(p.defect is Defect.INDEX for p in problems)  # index points at nothing


def test_record_moved_to_another_position(stores: TempStores) -> None:
    path = stores.path()
    fill(stores, path)
    env = raw_env(path)
    db = env.open_db(log_db_name(LOG))
    with env.begin(write=True, db=db) as txn:
        txn.put(pack_u64(6), txn.get(pack_u64(3)) or b"")
    env.close()
    assert_corrupt_at(path, stores, 6, Defect.POSITION)


def test_writes_refuse_to_chain_onto_a_corrupt_tail(stores: TempStores) -> None:
    path = stores.path()
    fill(stores, path, count=3)
    env = raw_env(path)
    db = env.open_db(log_db_name(LOG))
    with env.begin(write=True, db=db) as txn:
        value = bytearray(txn.get(pack_u64(3)) or b"")
        value[3] ^= 1
        txn.put(pack_u64(3), bytes(value))
    env.close()
    recorder = LmdbApplicationRecorder(stores.open(path))
    with pytest.raises(CorruptRecordError) as exc:
        recorder.insert_events(batch("after", 1))
    assert exc.value.position == 3
    assert not isinstance(exc.value, IntegrityError)  # not mistaken for a conflict
    recorder.close()


def test_a_tail_changed_after_this_writer_wrote_it_is_checked_again(
    stores: TempStores,
) -> None:
    """The committer skips re-hashing the last record only while it is exactly the one
    it wrote; a tail whose checksum bytes changed is checked before anything chains."""
    store = stores.open()
    recorder = LmdbApplicationRecorder(store)
    recorder.insert_events(batch("first", 3))
    db = store.db(log_db_name(LOG))
    with store.env.begin(write=True, db=db) as txn:
        value = bytearray(txn.get(pack_u64(3)) or b"")
        value[-1] ^= 1
        txn.put(pack_u64(3), bytes(value))
    with pytest.raises(CorruptRecordError) as exc:
        recorder.insert_events(batch("after", 1))
    assert exc.value.position == 3
    recorder.close()


def test_chain_starts_at_genesis_and_links_every_record(stores: TempStores) -> None:
    recorder = LmdbApplicationRecorder(stores.open())
    for i in range(5):
        recorder.insert_events(batch(f"b{i}", 3))
    records = list(iter_log(recorder.store, LOG, chunk=4))  # several chunks
    assert [r.id for r in records] == list(range(1, 16))
    assert records[0].prev == GENESIS
    for before, after in itertools.pairwise(records):
        assert after.prev == before.checksum
    # Starting mid-log still checks the first record's link.
    assert [r.id for r in iter_log(recorder.store, LOG, start=7, chunk=4)] == list(range(7, 16))
    report = verify_log(recorder)
    assert (
        report.ok and report.logs[0].records == 15 and report.logs[0].head == records[-1].checksum
    )
    recorder.close()


def test_same_events_give_byte_identical_logs(stores: TempStores) -> None:
    heads = []
    for _ in range(2):
        recorder = LmdbApplicationRecorder(stores.open())
        recorder.insert_events(batch("x", 4))
        recorder.insert_events([StoredEvent("text-id", 1, "t", b"\x00\xff")])
        heads.append(verify_log(recorder).logs[0].head)
        recorder.close()
    assert heads[0] == heads[1]


def test_open_readonly_on_a_copy(stores: TempStores, tmp_path: Path) -> None:
    path = stores.path()
    fill(stores, path, count=30)
    copy = tmp_path / "copy"
    shutil.copytree(path, copy)
    (copy / "lock.mdb").unlink()  # a copy need not carry the lock file
    with open_readonly(copy) as reader:
        assert reader.logs() == [LOG]
        assert reader.max_notification_id() == 30
        records = list(reader.records())
        assert [r.id for r in records] == list(range(1, 31))
        assert records[12].state == marker(13)
        notifications = list(reader.notifications(start=29))
        assert [n.id for n in notifications] == [29, 30]
        assert verify_log(reader).ok
    assert not (copy / "lock.mdb").exists()  # nothing written
