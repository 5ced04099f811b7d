"""Ways to damage a copy of a store, each the way a disk, a filesystem or a person does.

Every function takes the directory of an LMDB environment (the log's, or the views') and
changes its ``data.mdb`` in place, outside LMDB. Locations are found from the file itself
(LMDB's meta pages, or the bytes of a known record), never guessed.
"""

from __future__ import annotations

import os
import struct
from pathlib import Path

import lmdb

from costart.lmdbkit.datafile import PAGE_HEADER

DATA = "data.mdb"
_TXN_OFFSET = PAGE_HEADER + 128  # the txn id field of a meta page
_PAGE_SIZE_OFFSET = PAGE_HEADER + 24


def page_size(directory: Path) -> int:
    raw = (directory / DATA).read_bytes()[: _PAGE_SIZE_OFFSET + 4]
    return int(struct.unpack_from("<I", raw, _PAGE_SIZE_OFFSET)[0])


def meta_txn_ids(directory: Path) -> tuple[int, int]:
    raw = (directory / DATA).read_bytes()
    size = page_size(directory)
    first = struct.unpack_from("<Q", raw, _TXN_OFFSET)[0]
    second = struct.unpack_from("<Q", raw, size + _TXN_OFFSET)[0]
    return int(first), int(second)


def flip_byte(path: Path, offset: int, mask: int = 0x01) -> None:
    with path.open("r+b") as f:
        f.seek(offset)
        byte = f.read(1)[0]
        f.seek(offset)
        f.write(bytes([byte ^ mask]))


def flip_newest_meta_txn(directory: Path, bit: int = 0) -> None:
    """Flip one bit of the newest meta page's transaction id (bit 0: LMDB then takes the
    older meta page, rolling the environment back one write transaction)."""
    first, second = meta_txn_ids(directory)
    slot = 0 if first > second else 1
    flip_byte(directory / DATA, slot * page_size(directory) + _TXN_OFFSET + bit // 8, 1 << bit % 8)


def flip_meta_magic(directory: Path, slot: int) -> None:
    flip_byte(directory / DATA, slot * page_size(directory) + PAGE_HEADER, 0x10)


def truncate(directory: Path, size: int) -> None:
    os.truncate(directory / DATA, size)


def truncate_to_meta_pages(directory: Path) -> None:
    truncate(directory, 2 * page_size(directory))


def truncate_mid_page(directory: Path) -> None:
    """Cut the file inside a page that holds data (half way through its last used page)."""
    env = lmdb.open(str(directory), readonly=True, lock=False)
    last = int(env.info()["last_pgno"])
    env.close()
    truncate(directory, last * page_size(directory) + page_size(directory) // 2)


def flip_in_value(directory: Path, value: bytes, at: int = 0) -> list[int]:
    """Flip one byte ``at`` bytes into every stored occurrence of ``value`` (LMDB copies
    pages on write, so freed pages may hold older copies; the live one is among them);
    returns the file offsets."""
    raw = (directory / DATA).read_bytes()
    offsets = []
    found = raw.find(value)
    while found >= 0:
        offsets.append(found + at)
        found = raw.find(value, found + 1)
    assert offsets, "value not found in the file"
    for offset in offsets:
        flip_byte(directory / DATA, offset)
    return offsets


def stored_value(directory: Path, db: bytes, key: bytes) -> bytes:
    """The stored bytes of one key of a named database (to find them in the file)."""
    env = lmdb.open(str(directory), readonly=True, lock=False, max_dbs=64)
    try:
        handle = env.open_db(db, create=False)
        with env.begin() as txn:
            value = txn.get(key, db=handle)
    finally:
        env.close()
    assert value is not None, f"no key {key!r} in {db!r}"
    return bytes(value)
