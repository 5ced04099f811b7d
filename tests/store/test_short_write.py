"""LMDB reports a run of pages the kernel wrote only part of (the disk, or the file-size
limit, ended inside it) as EIO: `short_write_without_room` tells that full disk from a
real I/O error, so the submit is answered "out of space" whichever way the disk filled."""

from __future__ import annotations

import resource
from pathlib import Path

import lmdb
import pytest

from costart.lmdbkit import datafile
from costart.lmdbkit.datafile import DATA_FILE, short_write_without_room

EIO = lmdb.Error("mdb_txn_commit: Input/output error")


@pytest.fixture
def store(tmp_path: Path) -> Path:
    (tmp_path / DATA_FILE).write_bytes(b"\0" * 8192)
    return tmp_path


def test_an_eio_at_the_file_size_limit_is_a_full_disk(store, monkeypatch):
    monkeypatch.setattr(resource, "getrlimit", lambda _: (8192, resource.RLIM_INFINITY))
    assert short_write_without_room(EIO, store, needed=4096)


def test_an_eio_with_no_room_left_on_the_filesystem_is_a_full_disk(store, monkeypatch):
    monkeypatch.setattr(datafile, "free_bytes", lambda _: 1024)
    assert short_write_without_room(EIO, store, needed=4096)


def test_an_eio_with_room_left_is_a_real_io_error(store, monkeypatch):
    monkeypatch.setattr(resource, "getrlimit", lambda _: (8193, resource.RLIM_INFINITY))
    monkeypatch.setattr(datafile, "free_bytes", lambda _: 1 << 30)
    assert not short_write_without_room(EIO, store, needed=4096)


def test_another_error_is_never_taken_for_a_short_write(store, monkeypatch):
    monkeypatch.setattr(datafile, "free_bytes", lambda _: 0)
    assert not short_write_without_room(lmdb.Error("MDB_CORRUPTED"), store, needed=4096)
    assert not short_write_without_room(EIO, store / "missing", needed=4096)
