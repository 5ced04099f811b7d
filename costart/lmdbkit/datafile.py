"""Checks of an LMDB data file made *before* it is mapped (ADR 0028).

LMDB maps ``data.mdb`` and trusts it: a file shorter than its meta pages claim kills the
process with SIGBUS on the first read past the end, an empty file is silently taken for
a new environment (and written over), and a bit flipped in the newest meta page's
transaction id silently rolls the environment back to the previous commit. None of that
can be caught once the file is mapped, so every opener (the log's store and the views)
reads the two meta pages with plain file reads first and refuses a file that is not
whole, naming what and where.

Meta page layout (LMDB 0.9, 64-bit; both pages start with a 16-byte page header):
magic u32, version u32, address u64, map size u64, two database records of 48 bytes
(the free-list database's first field holds the page size), last page u64, txn id u64.
LMDB writes the meta of transaction ``t`` into page ``t % 2``, so of two whole meta pages
one holds an even and the other an odd id, one apart (or both 0: never committed).
"""

from __future__ import annotations

import errno
import os
import resource
import struct
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from costart.lmdbkit.errors import DataFileError, StoreFullError

DATA_FILE: Final = "data.mdb"
LOCK_FILE: Final = "lock.mdb"
MAGIC: Final = 0xBEEFC0DE
VERSION: Final = 1
PAGE_HEADER: Final = 16
_META: Final = struct.Struct("<IIQQ48s48sQQ")
_DB_PAGE_SIZE: Final = struct.Struct("<I")  # md_pad of the free-list database
_DB_ROOT: Final = struct.Struct("<Q")  # md_root: the last field of a database record
_ROOT_OFFSET: Final = 40
_NO_PAGE: Final = 2**64 - 1
MIN_PAGE: Final = 512
MAX_PAGE: Final = 65536
READ_ATTEMPTS: Final = 3
"""A writer in another process may commit between our reads: an inconsistent pair of
meta pages is read again before it is called damage."""


@dataclass(frozen=True)
class Meta:
    """One meta page, as far as the checks need it."""

    slot: int
    page_size: int
    last_page: int
    txn_id: int
    roots: tuple[int, int]


@dataclass(frozen=True)
class DataFileState:
    """What a whole data file's newest meta page says."""

    path: Path
    size: int
    page_size: int
    txn_id: int
    needed: int
    """Bytes the newest meta page says the file holds (last page + 1 pages)."""


def _meta(path: Path, raw: bytes, slot: int, offset: int) -> Meta:
    body = raw[offset + PAGE_HEADER : offset + PAGE_HEADER + _META.size]
    if len(body) < _META.size:
        raise DataFileError(path, f"meta page {slot} is cut short ({len(raw)} bytes in the file)")
    magic, version, _, _, free_db, main_db, last_page, txn_id = _META.unpack(body)
    if magic != MAGIC or version != VERSION:
        raise DataFileError(
            path, f"meta page {slot} is not an LMDB meta page (magic {magic:#x}, version {version})"
        )
    page_size = _DB_PAGE_SIZE.unpack_from(free_db)[0]
    roots = (
        _DB_ROOT.unpack_from(free_db, _ROOT_OFFSET)[0],
        _DB_ROOT.unpack_from(main_db, _ROOT_OFFSET)[0],
    )
    return Meta(slot, page_size, last_page, txn_id, roots)


def _check_meta(path: Path, meta: Meta, page_size: int) -> None:
    if meta.page_size != page_size:
        raise DataFileError(
            path, f"meta page {meta.slot} says page size {meta.page_size}, meta page 0 {page_size}"
        )
    for name, root in zip(("free-list", "main"), meta.roots, strict=True):
        if root != _NO_PAGE and root > meta.last_page:
            raise DataFileError(
                path,
                f"meta page {meta.slot}: the {name} tree's root page {root} lies past the "
                f"last page {meta.last_page}",
            )


def _read_pair(path: Path, fd: int) -> tuple[Meta, Meta]:
    head = os.pread(fd, PAGE_HEADER + _META.size, 0)
    first = _meta(path, head, 0, 0)
    page_size = first.page_size
    if page_size < MIN_PAGE or page_size > MAX_PAGE or page_size & (page_size - 1):
        raise DataFileError(path, f"meta page 0 names an impossible page size {page_size}")
    # Both meta pages from one read: a writer in another process commits between two
    # reads often enough to make an intact pair look non-consecutive.
    both = os.pread(fd, page_size + PAGE_HEADER + _META.size, 0)
    first = _meta(path, both, 0, 0)
    second = _meta(path, both, 1, page_size)
    _check_meta(path, first, page_size)
    _check_meta(path, second, page_size)
    return first, second


def _pair_problem(first: Meta, second: Meta) -> str | None:
    """Why two meta pages cannot both be whole (None: they can)."""
    if first.txn_id == second.txn_id == 0:
        return None  # a new environment: nothing committed yet
    if first.txn_id % 2 or not second.txn_id % 2:
        return (
            f"meta page 0 holds transaction {first.txn_id} and meta page 1 transaction "
            f"{second.txn_id}: page 0 only ever holds even ids and page 1 odd ones"
        )
    if abs(first.txn_id - second.txn_id) != 1:
        return (
            f"meta pages hold transactions {first.txn_id} and {second.txn_id}, which are not "
            "consecutive: the newest commit's meta page is damaged (the store would silently "
            "roll back to an older commit)"
        )
    return None


def check_data_file(directory: str | os.PathLike[str]) -> DataFileState | None:
    """Check ``directory``'s ``data.mdb`` before LMDB maps it.

    Returns None when there is no data file (a new environment; but see
    `check_not_lost`), else what its newest meta page says. Raises `DataFileError`
    naming the file and the problem: empty, shorter than its meta pages or than the size
    its newest meta page claims (both sizes named), meta pages that are not LMDB's or
    that do not form a consecutive pair.
    """
    path = Path(directory) / DATA_FILE
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    except OSError as error:
        raise DataFileError(path, f"cannot be read: {error.strerror}") from None
    try:
        size = os.fstat(fd).st_size
        if size == 0:
            raise DataFileError(
                path,
                "is empty (0 bytes): its records are gone; it is not taken for a new store",
            )
        problem = "unknown"
        for attempt in range(READ_ATTEMPTS):
            first, second = _read_pair(path, fd)
            found = _pair_problem(first, second)
            if found is None:
                break
            problem = found
            time.sleep(0.01 * (attempt + 1))
        else:
            raise DataFileError(path, problem)
        newest = first if first.txn_id >= second.txn_id else second
        # Stat after reading the metas: a writer extends the file before it commits.
        size = os.fstat(fd).st_size
        needed = (newest.last_page + 1) * first.page_size
        if size < needed:
            raise DataFileError(
                path,
                f"is {size} bytes but its newest meta page (transaction {newest.txn_id}) "
                f"says it holds {needed} bytes ({newest.last_page + 1} pages of "
                f"{first.page_size}): the file was cut short",
            )
        return DataFileState(path, size, first.page_size, newest.txn_id, needed)
    finally:
        os.close(fd)


def check_not_lost(directory: str | os.PathLike[str]) -> None:
    """Refuse a directory whose data file is missing although LMDB's lock file is there:
    the environment was opened before, so its data file was deleted, not never made."""
    base = Path(directory)
    if not (base / DATA_FILE).exists() and (base / LOCK_FILE).exists():
        raise DataFileError(
            base / DATA_FILE,
            f"is missing although {LOCK_FILE} is there: the store existed and its data "
            "file was deleted; it is not taken for a new store",
        )


LOCK_HEADER_BYTES: Final = 128
"""LMDB's lock file: a 128-byte header, then one 64-byte slot per reader."""
LOCK_SLOT_BYTES: Final = 64
NO_SPACE: Final = tuple(os.strerror(code) for code in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG))
"""How LMDB reports a full disk, a spent quota or a file-size limit: in its message."""


def is_space_error(error: BaseException) -> bool:
    """Whether ``error`` (an LMDB or OS error) says the disk had no room."""
    if isinstance(error, OSError) and error.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
        return True
    return any(text in str(error) for text in NO_SPACE)


SHORT_WRITE: Final = os.strerror(errno.EIO)
"""How LMDB reports a write the kernel took only part of: when a run of pages reaches
the end of the disk (or the file-size limit) part of the way through, the kernel writes
what fits and LMDB, seeing a short count, says EIO, not ENOSPC."""


def short_write_without_room(
    error: BaseException, directory: str | os.PathLike[str], needed: int
) -> bool:
    """Whether ``error`` is LMDB's EIO for a short write that met a full disk: the data
    file in ``directory`` has reached the process's file-size limit, or the filesystem
    has less than ``needed`` bytes left. An EIO with room left is a real I/O error."""
    if SHORT_WRITE not in str(error):
        return False
    try:
        size = os.stat(Path(directory) / DATA_FILE).st_size
    except OSError:
        return False
    limit, _ = resource.getrlimit(resource.RLIMIT_FSIZE)
    if limit != resource.RLIM_INFINITY and size >= limit:
        return True
    free = free_bytes(directory)
    return free is not None and free < needed


def free_bytes(directory: str | os.PathLike[str]) -> int | None:
    try:
        stat = os.statvfs(directory)
    except OSError:
        return None
    return stat.f_bavail * stat.f_frsize


def reserve_lock_file(directory: str | os.PathLike[str], max_readers: int) -> None:
    """Allocate LMDB's lock file before LMDB maps it.

    LMDB sizes the lock file with ``ftruncate`` (a sparse file) and writes its reader
    table through the mapping: on a full disk the first write to a page with no block
    behind it kills the process with SIGBUS. Allocating the blocks first turns that into
    `StoreFullError` naming the file and the bytes it needs."""
    path = Path(directory) / LOCK_FILE
    size = LOCK_HEADER_BYTES + max_readers * LOCK_SLOT_BYTES
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as error:
        if is_space_error(error):
            free = free_bytes(directory)
            raise StoreFullError(os.fspath(directory), size, free, str(error)) from None
        raise
    try:
        os.posix_fallocate(fd, 0, size)
    except OSError as error:
        if is_space_error(error):
            raise StoreFullError(
                os.fspath(directory), size, free_bytes(directory), f"{path}: {error.strerror}"
            ) from None
        if error.errno not in (errno.EOPNOTSUPP, errno.EINVAL):
            raise
    finally:
        os.close(fd)


def forget_new_environment(directory: str | os.PathLike[str]) -> None:
    """Remove what a failed first open of a new environment left (its lock file, an empty
    data file), so the next open starts a new store instead of refusing a "lost" one."""
    base = Path(directory)
    data = base / DATA_FILE
    if data.exists() and data.stat().st_size == 0:
        data.unlink()
    if not data.exists():
        (base / LOCK_FILE).unlink(missing_ok=True)
