"""costart's own chain checks, one test per place that writes or checks a link: the
writer's first link and its link after a reopen, and each reader (notifications, full-log
iteration, a mid-log start, the verifier) naming the first record that does not link.

A forged record here is self-consistent (its checksum is right), so only the chain can
tell it from the real one."""

from __future__ import annotations

import itertools

import lmdb
import pytest
from eventsourcing.persistence import OperationalError

from costart.eventlog.errors import CorruptRecordError, Defect
from costart.store import GENESIS, LmdbApplicationRecorder, iter_log, verify_log
from costart.store.integrity import Problem
from costart.store.lmdbenv import MAX_DBS, log_db_name
from costart.store.record_layout import decode_record, encode_record, pack_u64
from costart.store.whole_log import list_logs

from .support import TempStores, batch

LOG = "stored_events"
COUNT = 12


def written_log(stores: TempStores) -> str:
    path = stores.path()
    store = stores.open(path)
    recorder = LmdbApplicationRecorder(store)
    for i in range(COUNT):
        recorder.insert_events(batch(f"e{i}", 1))
    recorder.close()
    store.release()
    return path


def forge(path: str, position: int, prev: bytes) -> None:
    """Replace the record at ``position`` with one that carries the same event and a
    valid checksum, linked to ``prev``."""
    env = lmdb.open(path, max_dbs=MAX_DBS, map_size=1 << 26)
    db = env.open_db(log_db_name(LOG))
    with env.begin(write=True, db=db) as txn:
        old = decode_record(txn.get(pack_u64(position)) or b"", LOG, position)
        event = (b"", old.originator_id, old.originator_version, old.topic, old.state)
        forged, _ = encode_record(position, event, prev)
        txn.put(pack_u64(position), forged)
    env.close()


def chain_error_at(read, position: int) -> None:
    with pytest.raises(CorruptRecordError) as exc:
        read()
    assert (exc.value.position, exc.value.defect) == (position, Defect.CHAIN)


@pytest.mark.parametrize("position", [1, 6, COUNT])
def test_every_reader_names_the_first_record_that_does_not_link(
    stores: TempStores, position: int
) -> None:
    path = written_log(stores)
    forge(path, position, bytes(16))
    recorder = LmdbApplicationRecorder(stores.open(path))
    try:
        chain_error_at(lambda: recorder.select_notifications(None, 100), position)
        chain_error_at(lambda: list(iter_log(recorder.store, LOG, chunk=4)), position)
        # A read that starts at the forged record still checks its link to the one before.
        chain_error_at(lambda: list(iter_log(recorder.store, LOG, start=position)), position)
        if position > 1:
            chain_error_at(lambda: recorder.select_notifications(position - 1, 100), position)
        report = verify_log(recorder)
        assert [(p.position, p.defect) for p in report.problems][:1] == [(position, Defect.CHAIN)]
    finally:
        recorder.close()


def test_a_first_record_linked_to_anything_but_genesis_is_refused(stores):
    path = written_log(stores)
    # Linked to a real checksum (the second record's), not to GENESIS.
    store = stores.open(path)
    recorder = LmdbApplicationRecorder(store)
    second = list(iter_log(store, LOG))[1].checksum
    recorder.close()
    store.release()
    forge(path, 1, second)
    recorder = LmdbApplicationRecorder(stores.open(path))
    try:
        chain_error_at(lambda: recorder.select_notifications(1, 5), 1)
        chain_error_at(lambda: list(iter_log(recorder.store, LOG)), 1)
    finally:
        recorder.close()


def test_the_writer_links_across_a_reopen_and_a_verifier_agrees(stores):
    path = stores.path()
    for session in range(3):
        store = stores.open(path)
        recorder = LmdbApplicationRecorder(store)
        for i in range(2):
            recorder.insert_events(batch(f"s{session}-{i}", 2))
        recorder.close()
        store.release()
    recorder = LmdbApplicationRecorder(stores.open(path))
    try:
        records = list(iter_log(recorder.store, LOG))
        assert len(records) == 12 and records[0].prev == GENESIS
        for before, after in itertools.pairwise(records):
            assert after.prev == before.checksum, f"record {after.id} does not link"
        report = verify_log(recorder)
        assert report.ok and report.logs[0].head == records[-1].checksum
    finally:
        recorder.close()


def test_the_verifier_reports_each_broken_link_once(stores):
    """After a forged record the verifier goes on from the forged record's checksum: the
    next real record no longer links (it names the old one), the rest do."""
    path = written_log(stores)
    forge(path, 4, bytes(16))
    forge(path, 9, bytes(16))
    problems = verify_log(path).problems
    assert problems == tuple(Problem(LOG, p, Defect.CHAIN) for p in (4, 5, 9, 10))


def test_the_verifier_reads_a_log_longer_than_its_chunk_and_names_a_gap_past_it(
    stores: TempStores,
) -> None:
    """More records than one read pass takes (4096): every record is counted once, and a
    gap past the first pass is named with its log and where the log goes on."""
    path = stores.path()
    store = stores.open(path)
    recorder = LmdbApplicationRecorder(store)
    for i in range(90):
        recorder.insert_events(batch(f"c{i}", 100))
    report = verify_log(recorder)
    assert report.ok and report.logs[0].records == 9000 and report.logs[0].last_id == 9000
    with store.env.begin(write=True, db=store.db(log_db_name(LOG))) as txn:
        txn.delete(pack_u64(5000))
    problems = verify_log(recorder).problems
    assert problems[0] == Problem(LOG, 5000, Defect.GAP, "next is 5001")
    recorder.close()


def test_a_bad_record_is_reported_under_its_log(stores: TempStores) -> None:
    path = written_log(stores)
    env = lmdb.open(path, max_dbs=MAX_DBS, map_size=1 << 26)
    with env.begin(write=True, db=env.open_db(log_db_name(LOG))) as txn:
        value = bytearray(txn.get(pack_u64(3)) or b"")
        value[5] ^= 1
        txn.put(pack_u64(3), bytes(value))
    env.close()
    (problem, *_) = verify_log(path).problems
    assert (problem.log, problem.position, problem.defect) == (LOG, 3, Defect.CHECKSUM)


def test_verifying_a_log_that_does_not_exist_fails_and_creates_nothing(
    stores: TempStores,
) -> None:
    store = stores.open()
    recorder = LmdbApplicationRecorder(store)
    recorder.insert_events(batch("only", 1))
    with pytest.raises(OperationalError, match=r"no-such-log.*does not exist"):
        verify_log(recorder, log="no-such-log")
    assert list_logs(store) == [LOG]
    recorder.close()


@pytest.mark.parametrize("records", [0, 4096])
def test_a_log_that_ends_at_a_pass_boundary_is_summed_up(stores: TempStores, records: int) -> None:
    """An empty log, and one that ends exactly where a read pass does, still get their
    summary (the next pass finds nothing to read)."""
    store = stores.open()
    recorder = LmdbApplicationRecorder(store)
    for i in range(records // 128):
        recorder.insert_events(batch(f"p{i}", 128))
    (summary,) = verify_log(recorder).logs
    assert (summary.log, summary.records, summary.last_id) == (LOG, records, records)
    assert summary.head == (GENESIS if records == 0 else list(iter_log(store, LOG))[-1].checksum)
    recorder.close()


def test_a_record_stored_at_the_wrong_position_is_reported_with_where_it_belongs(
    stores: TempStores,
) -> None:
    path = written_log(stores)
    env = lmdb.open(path, max_dbs=MAX_DBS, map_size=1 << 26)
    with env.begin(write=True, db=env.open_db(log_db_name(LOG))) as txn:
        txn.put(pack_u64(6), txn.get(pack_u64(3)) or b"")
    env.close()
    assert verify_log(path).problems[0] == Problem(LOG, 6, Defect.POSITION, "record says 3")
