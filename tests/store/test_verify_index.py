"""`verify_log`'s whole report: the originator index checked against the log (an entry
pointing at no record, at another originator's record, one too many or too few), each
problem once across chunked passes, and the summary's exact counts and head."""

from __future__ import annotations

from hashlib import blake2b

import msgspec
import pytest
from eventsourcing.persistence import OperationalError

from costart.eventlog.errors import CorruptRecordError, Defect
from costart.store import integrity as verify
from costart.store.integrity import LogSummary, Problem, iter_verified, verify_log
from costart.store.lmdbenv import index_db_name, log_db_name
from costart.store.record_layout import GENESIS, originator_key, pack_u64
from costart.store.record_scan import scan
from costart.store.recorders import LmdbAggregateRecorder, LmdbApplicationRecorder
from costart.store.whole_log import open_readonly

from .support import TempStores, batch, batch_originator
from .test_integrity import LOG, fill, marker, raw_env


def index_key_of(tag: str, version: int = 1) -> bytes:
    return originator_key(batch_originator(tag)) + pack_u64(version)


def edit_index(path: str, change) -> None:
    env = raw_env(path)
    db = env.open_db(index_db_name(LOG))
    with env.begin(write=True, db=db) as txn:
        change(txn)
    env.close()


def problems_of(path: str) -> list[tuple[int, Defect, str]]:
    return [(p.position, p.defect, p.detail) for p in verify_log(path).problems]


def test_a_whole_log_is_summed_up_by_its_count_last_id_and_head(stores: TempStores):
    path = stores.path()
    fill(stores, path, count=5)
    env = raw_env(path)
    with env.begin(db=env.open_db(log_db_name(LOG))) as txn:
        head = (txn.get(pack_u64(5)) or b"")[-16:]
    env.close()
    report = verify_log(path)
    assert report.ok and report.problems == ()
    assert report.logs == (LogSummary(LOG, 5, 5, head),)


def test_an_empty_log_is_summed_up_from_genesis(stores: TempStores):
    store = stores.open()
    recorder = LmdbApplicationRecorder(store)
    report = verify_log(recorder)
    assert report.ok
    assert report.logs == (LogSummary(LOG, 0, 0, GENESIS),)
    recorder.close()


def test_an_index_entry_pointing_at_no_record_is_named(stores: TempStores):
    path = stores.path()
    fill(stores, path, count=5)
    edit_index(path, lambda txn: txn.put(index_key_of("e3"), pack_u64(9)))
    assert verify_log(path).problems == (Problem(LOG, 9, Defect.INDEX, "no such record"),)


def test_an_index_entry_pointing_at_another_originators_record_is_named(stores: TempStores):
    path = stores.path()
    fill(stores, path, count=5)
    edit_index(path, lambda txn: txn.put(index_key_of("e3"), pack_u64(4)))
    assert verify_log(path).problems == (
        Problem(LOG, 4, Defect.INDEX, "originator/version differ"),
    )


def test_an_index_entry_under_another_version_is_named(stores: TempStores):
    path = stores.path()
    fill(stores, path, count=5)

    def move(txn):
        txn.delete(index_key_of("e2"))
        txn.put(index_key_of("e2", 2), pack_u64(2))

    edit_index(path, move)
    assert problems_of(path) == [(2, Defect.INDEX, "originator/version differ")]


def test_an_index_with_an_entry_too_many_or_too_few_says_how_many_of_each(stores: TempStores):
    path = stores.path()
    fill(stores, path, count=5)
    edit_index(path, lambda txn: txn.delete(index_key_of("e4")))
    assert problems_of(path) == [(0, Defect.INDEX, "4 index entries, 5 records")]
    edit_index(path, lambda txn: txn.put(index_key_of("e4"), pack_u64(4)))
    edit_index(path, lambda txn: txn.put(index_key_of("zz"), pack_u64(4)))
    assert problems_of(path) == [
        (4, Defect.INDEX, "originator/version differ"),
        (0, Defect.INDEX, "6 index entries, 5 records"),
    ]


def test_an_index_entry_of_a_corrupt_record_is_left_to_the_records_pass(stores: TempStores):
    path = stores.path()
    fill(stores, path, count=5)
    env = raw_env(path)
    with env.begin(write=True, db=env.open_db(log_db_name(LOG))) as txn:
        value = bytearray(txn.get(pack_u64(3)) or b"")
        value[10] ^= 1  # in the payload: the record's own checksum still links on
        txn.put(pack_u64(3), bytes(value))
    env.close()
    assert problems_of(path) == [(3, Defect.CHECKSUM, "")]


@pytest.mark.parametrize("bad", [1, 3, 4, 6, 7], ids=lambda n: f"entry-{n}")
def test_chunked_passes_check_every_index_entry_once(stores: TempStores, monkeypatch, bad):
    monkeypatch.setattr(verify, "_CHUNK", 3)
    path = stores.path()
    fill(stores, path, count=7)
    env = raw_env(path)
    with env.begin(db=env.open_db(index_db_name(LOG))) as txn:
        keys = [key for key, _ in txn.cursor()]
    env.close()
    assert len(keys) == 7
    edit_index(path, lambda txn: txn.put(keys[bad - 1], pack_u64(9)))
    assert problems_of(path) == [(9, Defect.INDEX, "no such record")]
    report = verify_log(path)
    assert report.logs[0].records == 7 and report.logs[0].last_id == 7


def test_every_kind_of_target_is_verified_and_a_path_opened_is_released(stores: TempStores):
    path = stores.path()
    fill(stores, path, count=3)
    expected = verify_log(path)
    reader = open_readonly(path)
    assert verify_log(reader) == expected
    assert verify_log(reader.store) == expected
    assert verify_log(reader.store, LOG) == expected
    reader.store.release()
    store = stores.open(path)
    recorder = LmdbApplicationRecorder(store)
    snapshots = LmdbAggregateRecorder(store, log_name="snapshots")
    assert verify_log(recorder) == expected  # its own log only, not the snapshots'
    assert [s.log for s in verify_log(snapshots).logs] == ["snapshots"]
    assert [s.log for s in verify_log(store).logs] == sorted([LOG, "snapshots"])
    # The caller's recorder and store were not released by the verifier.
    assert len(recorder.select_notifications(1, 10)) == 3 and not store.closed
    recorder.close()
    store.release()
    assert verify_log(path, LOG) == expected  # the earlier path run let go of its store


def test_a_problem_reads_like_the_error_a_reader_would_raise():
    problem = Problem(LOG, 7, Defect.GAP, "next is 9")
    assert str(problem) == str(CorruptRecordError(LOG, 7, Defect.GAP, "next is 9"))
    assert (
        str(problem)
        == "missing notification id at notification id 7 in log 'stored_events': next is 9"
    )


def test_iter_verified_reads_the_applications_log_of_a_path_from_a_start(stores: TempStores):
    path = stores.path()
    fill(stores, path, count=5)
    assert [r.id for r in iter_verified(path)] == [1, 2, 3, 4, 5]
    assert [r.id for r in iter_verified(path, start=3)] == [3, 4, 5]
    assert [r.state for r in iter_verified(path, LOG, start=5)] == [marker(5)]


def test_a_missing_record_is_a_gap_that_names_the_next_one(stores: TempStores):
    path = stores.path()
    fill(stores, path, count=6)
    env = raw_env(path)
    with env.begin(write=True, db=env.open_db(log_db_name(LOG))) as txn:
        txn.delete(pack_u64(4))
    env.close()
    with pytest.raises(CorruptRecordError) as caught:
        list(iter_verified(path))
    assert (caught.value.position, caught.value.defect, caught.value.detail) == (
        4,
        Defect.GAP,
        "next is 5",
    )


def test_a_scan_stops_after_its_stop_and_says_where_to_go_on(stores: TempStores):
    path = stores.path()
    fill(stores, path, count=6)
    env = raw_env(path)
    with env.begin(db=env.open_db(log_db_name(LOG))) as txn:
        cursor = txn.cursor()
        assert cursor.set_range(pack_u64(2))
        found, expect, prev = scan(cursor, LOG, 2, None, 100, stop=4)
        assert [r.id for r in found] == [2, 3, 4]
        assert (expect, prev) == (5, found[-1].checksum)
        assert cursor.set_range(pack_u64(5))
        rest, expect, _ = scan(cursor, LOG, 5, prev, 100)
        assert ([r.id for r in rest], expect) == ([5, 6], 7)
    env.close()


def _put_records(path: str, changes: dict[int, bytes | None]) -> None:
    env = raw_env(path)
    with env.begin(write=True, db=env.open_db(log_db_name(LOG))) as txn:
        for position, value in changes.items():
            if value is None:
                txn.delete(pack_u64(position))
            else:
                txn.put(pack_u64(position), value)
    env.close()


def _first_error(path: str) -> CorruptRecordError:
    with pytest.raises(CorruptRecordError) as caught:
        list(iter_verified(path))
    return caught.value


def test_a_record_that_hashes_right_but_does_not_decode_is_malformed_in_its_log(
    stores: TempStores,
):
    path = stores.path()
    fill(stores, path, count=5)
    body = msgspec.msgpack.encode([3, 2, 3, 4, 5, 6, bytes(16)])[:-16]
    _put_records(path, {3: body + blake2b(body, digest_size=16).digest()})
    error = _first_error(path)
    assert (error.log, error.position, error.defect) == (LOG, 3, Defect.FORMAT)
    assert error.detail.startswith("Expected `str`, got `int`")


def test_a_gap_before_a_bad_record_is_named_as_the_gap_in_its_log(stores: TempStores):
    path = stores.path()
    fill(stores, path, count=6)
    env = raw_env(path)
    with env.begin(db=env.open_db(log_db_name(LOG))) as txn:
        fifth = bytearray(txn.get(pack_u64(5)) or b"")
    env.close()
    fifth[10] ^= 1
    undecodable = msgspec.msgpack.encode([5, 2, 3, 4, 5, 6, bytes(16)])[:-16]
    for bad in (bytes(fifth), undecodable + blake2b(undecodable, digest_size=16).digest()):
        _put_records(path, {4: None, 5: bad})
        error = _first_error(path)
        assert (error.log, error.position, error.defect, error.detail) == (
            LOG,
            4,
            Defect.GAP,
            "next is 5",
        )


def test_a_record_at_the_wrong_position_says_which_it_is(stores: TempStores):
    path = stores.path()
    fill(stores, path, count=6)
    env = raw_env(path)
    with env.begin(db=env.open_db(log_db_name(LOG))) as txn:
        third = txn.get(pack_u64(3)) or b""
    env.close()
    _put_records(path, {5: third})
    error = _first_error(path)
    assert (error.log, error.position, error.defect, error.detail) == (
        LOG,
        5,
        Defect.POSITION,
        "record says 3",
    )


def test_verifying_a_log_whose_index_is_gone_fails_naming_it_and_creates_nothing(
    stores: TempStores,
):
    path = stores.path()
    fill(stores, path, count=3)
    env = raw_env(path)
    with env.begin(write=True) as txn:
        txn.drop(env.open_db(index_db_name(LOG), txn=txn), delete=True)
    env.close()
    store = stores.open(path)  # writable: a verifier that created the index would succeed
    with pytest.raises(OperationalError) as caught:
        verify_log(store, LOG)
    assert str(caught.value) == (
        "LMDB database 'idx:stored_events' does not exist (CREATE_TABLE is off)"
    )
    store.release()
    env = raw_env(path)
    with env.begin() as txn:
        names = [key for key, _ in txn.cursor()]
    env.close()
    assert index_db_name(LOG) not in names


def _index(path: str) -> list[tuple[bytes, int]]:
    """The index entries in key order: (key, position)."""
    env = raw_env(path)
    with env.begin(db=env.open_db(index_db_name(LOG))) as txn:
        entries = [(key, int.from_bytes(value, "big")) for key, value in txn.cursor()]
    env.close()
    return entries


def test_an_emptied_index_is_counted_against_the_records(stores: TempStores):
    path = stores.path()
    fill(stores, path, count=3)
    keys = [key for key, _ in _index(path)]
    edit_index(path, lambda txn: [txn.delete(key) for key in keys])
    assert verify_log(path).problems == (
        Problem(LOG, 0, Defect.INDEX, "0 index entries, 3 records"),
    )


def test_an_index_ending_at_a_pass_boundary_is_still_counted(stores: TempStores, monkeypatch):
    monkeypatch.setattr(verify, "_CHUNK", 3)
    path = stores.path()
    fill(stores, path, count=7)
    last = _index(path)[-1][0]
    edit_index(path, lambda txn: txn.delete(last))
    assert verify_log(path).problems == (
        Problem(LOG, 0, Defect.INDEX, "6 index entries, 7 records"),
    )


def test_the_index_pass_goes_on_past_an_entry_of_a_corrupt_record(stores: TempStores):
    path = stores.path()
    fill(stores, path, count=5)
    entries = _index(path)
    first, last = entries[0], entries[-1]
    env = raw_env(path)
    with env.begin(write=True, db=env.open_db(log_db_name(LOG))) as txn:
        value = bytearray(txn.get(pack_u64(first[1])) or b"")
        value[10] ^= 1
        txn.put(pack_u64(first[1]), bytes(value))
    env.close()
    edit_index(path, lambda txn: txn.put(last[0], pack_u64(99)))
    assert verify_log(path).problems == (
        Problem(LOG, first[1], Defect.CHECKSUM),
        Problem(LOG, 99, Defect.INDEX, "no such record"),
    )


def test_verifying_through_a_recorder_leaves_its_store_to_its_holder(stores: TempStores):
    store = stores.open()
    recorder = LmdbApplicationRecorder(store)
    recorder.insert_events(batch("only", 2))
    for _ in range(2):
        assert verify_log(recorder).ok
        assert not store.closed
    assert len(recorder.select_notifications(1, 10)) == 2
    recorder.close()
