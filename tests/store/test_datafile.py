"""The data file is checked before LMDB maps it: a file that is not whole is refused by
name, never mapped (SIGBUS), never taken for a new store, never silently rolled back."""

from __future__ import annotations

import multiprocessing
import os
import time
from pathlib import Path

import lmdb
import pytest

from costart.lmdbkit.datafile import check_data_file, check_not_lost
from costart.lmdbkit.errors import DataFileError
from costart.store.lmdbenv import open_store
from costart.store.settings import StoreSettings
from tests.damage import damage


def _env(path: Path, commits: int = 5) -> Path:
    env = lmdb.open(str(path), map_size=1 << 22)
    for i in range(commits):
        with env.begin(write=True) as txn:
            txn.put(b"k%04d" % i, os.urandom(3000))
    env.close()
    return path


def test_a_whole_file_passes_and_says_what_its_newest_meta_page_says(tmp_path):
    state = check_data_file(_env(tmp_path))
    assert state is not None
    assert state.txn_id == 5 and state.needed <= state.size
    assert state.needed % state.page_size == 0


def test_no_data_file_is_a_new_store(tmp_path):
    assert check_data_file(tmp_path) is None
    check_not_lost(tmp_path)


def test_an_empty_data_file_is_refused_not_taken_for_a_new_store(tmp_path):
    damage.truncate(_env(tmp_path), 0)
    with pytest.raises(DataFileError, match=r"data\.mdb is empty \(0 bytes\)"):
        check_data_file(tmp_path)


@pytest.mark.parametrize("cut", ["to-meta-pages", "mid-page", "one-byte-short"])
def test_a_cut_short_file_is_refused_naming_both_sizes(tmp_path, cut):
    _env(tmp_path)
    needed = check_data_file(tmp_path).needed  # type: ignore[union-attr]
    if cut == "to-meta-pages":
        damage.truncate_to_meta_pages(tmp_path)
    elif cut == "mid-page":
        damage.truncate_mid_page(tmp_path)
    else:
        damage.truncate(tmp_path, needed - 1)
    size = (tmp_path / "data.mdb").stat().st_size
    with pytest.raises(DataFileError, match=rf"is {size} bytes but .* holds {needed} bytes"):
        check_data_file(tmp_path)


@pytest.mark.parametrize("bit", [0, 1, 3, 17, 40])
def test_a_bit_flipped_in_the_newest_meta_pages_txn_id_is_found(tmp_path, bit):
    _env(tmp_path)
    damage.flip_newest_meta_txn(tmp_path, bit)
    with pytest.raises(DataFileError, match="meta page"):
        check_data_file(tmp_path)


def test_lmdb_itself_would_roll_the_flipped_store_back_silently(tmp_path):
    """Why the check exists: LMDB opens the damaged file and shows the older commit."""
    _env(tmp_path, commits=5)
    damage.flip_newest_meta_txn(tmp_path, 0)
    env = lmdb.open(str(tmp_path), readonly=True, lock=False)
    with env.begin() as txn:
        assert txn.stat()["entries"] == 4  # one commit gone, no error
    env.close()


def test_a_damaged_meta_page_magic_is_refused(tmp_path):
    _env(tmp_path)
    damage.flip_meta_magic(tmp_path, 1)
    with pytest.raises(DataFileError, match="meta page 1 is not an LMDB meta page"):
        check_data_file(tmp_path)


def test_a_deleted_data_file_beside_its_lock_file_is_refused(tmp_path):
    (_env(tmp_path) / "data.mdb").unlink()
    with pytest.raises(DataFileError, match=r"is missing although lock\.mdb is there"):
        check_not_lost(tmp_path)


def test_the_store_refuses_to_map_a_cut_short_file(tmp_path):
    damage.truncate_mid_page(_env(tmp_path))
    with pytest.raises(DataFileError, match="the file was cut short"):
        open_store(StoreSettings(path=str(tmp_path)))
    with pytest.raises(DataFileError, match="the file was cut short"):
        open_store(StoreSettings(path=str(tmp_path), readonly=True))


def _write_fast(path: str, stop: multiprocessing.synchronize.Event) -> None:
    env = lmdb.open(path, map_size=1 << 26, sync=False, metasync=False)
    i = 0
    while not stop.is_set():
        with env.begin(write=True) as txn:
            txn.put(b"k%08d" % (i % 500), b"x" * 200)
        i += 1
    env.close()


def test_a_writer_committing_in_another_process_is_never_taken_for_damage(tmp_path):
    _env(tmp_path)
    stop = multiprocessing.get_context("spawn").Event()
    writer = multiprocessing.get_context("spawn").Process(
        target=_write_fast, args=(str(tmp_path), stop)
    )
    writer.start()
    try:
        seen: set[int] = set()
        deadline = time.monotonic() + 60
        # Until the writer has committed a few hundred times under our reads.
        while len(seen) < 200 and time.monotonic() < deadline:
            state = check_data_file(tmp_path)
            assert state is not None
            seen.add(state.txn_id)
        assert len(seen) >= 200, len(seen)
    finally:
        stop.set()
        writer.join(timeout=30)
