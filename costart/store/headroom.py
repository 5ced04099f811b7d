"""Zero-filled headroom at the end of the LMDB data file.

Why: a commit that writes pages past the end of ``data.mdb`` grows the file, and
on ext4/XFS the ``fdatasync`` that makes the commit durable must then also commit
the filesystem journal (new blocks, new size) -- several milliseconds instead of
tens of microseconds. Appending to a log grows the file on almost every commit.
Keeping already-written zero blocks ahead of LMDB's last page makes those commits
overwrite allocated blocks, so their flush writes data only (the same reason
PostgreSQL zero-fills its WAL segments before use).

Safety: the zeros are written only past the end of the file and past LMDB's last
page, while this process holds a write transaction -- LMDB's single-writer lock,
shared with other processes -- so no writer can be placing a page there at the
same time. LMDB never reads past its last page (the meta page says where data
ends), so the zeros are never mistaken for data, and a crash in the middle of a
fill leaves only more zeros. Failing to fill is not an error: commits still work,
just slower, and the failure is logged.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Final

from costart.logging_setup import library_logger

if TYPE_CHECKING:
    from costart.store.environment_port import EnvironmentPort

log = library_logger(__name__)

CHUNK: Final = 1 << 20
"""Bytes written per ``pwrite`` while filling."""
_ZEROS: Final = bytes(CHUNK)
COMMIT_PAGES: Final = 16
"""Pages a commit is assumed to add at most besides its records (B-tree paths, free
list): it only paces the checks -- an underestimate makes a commit grow the file, as
it would without headroom, never anything worse."""


class Headroom:
    """Keeps between ``size / 2`` and ``size`` zero bytes after LMDB's last page.

    A fill costs one journal commit, so one every ``size / 2`` bytes written instead of
    one per commit; a single commit bigger than that (a large snapshot) grows the file
    as it would without headroom, and the next check refills."""

    def __init__(self, store: EnvironmentPort, size: int) -> None:
        self._store = store
        self._size = size
        self._data_file = os.path.join(store.settings.path, "data.mdb")
        self._page_size = int(store.env.stat()["psize"])
        self._file_end = -1  # unknown until the first check
        self._slack = 0  # bytes that may still be written before the next check
        self.fills = 0

    def keep(self, written: int) -> None:
        """Fill if the headroom fell below its low mark; called by the committer after
        a commit that appended ``written`` bytes of state; never raises.

        Cheap when nothing is due: it asks LMDB where its data ends only once the bytes
        written (plus a few pages per commit for the trees) may have used up the slack
        measured at the last look."""
        if self._size <= 0:
            return
        self._slack -= written + COMMIT_PAGES * self._page_size
        if self._slack > 0:
            return
        info = self._store.env.info()
        used = (int(info["last_pgno"]) + 1) * self._page_size
        end = self._file_end
        if end >= int(info["map_size"]):
            self._slack = self._size // 2  # the map may grow: look again later
            return
        if end - used >= self._size // 2:
            self._slack = end - used - self._size // 2
            return
        try:
            self._fill()
        except Exception as e:  # an optimisation must never fail a write
            log.warning("lmdb.headroom_fill_failed", path=self._data_file, error=repr(e))
            self._size = 0
            return
        self._slack = self._file_end - self._used() - self._size // 2

    def _used(self) -> int:
        return (int(self._store.env.info()["last_pgno"]) + 1) * self._page_size

    def _fill(self) -> None:
        store = self._store
        txn = store.begin(write=True)  # LMDB's writer lock: no page is being placed
        try:
            used = self._used()
            target = min(used + self._size, int(store.env.info()["map_size"]))
            fd = os.open(self._data_file, os.O_WRONLY)
            try:
                end = os.fstat(fd).st_size
                start = max(end, used)
                position = start
                while position < target:
                    size = min(CHUNK, target - position)
                    os.pwrite(fd, _ZEROS[:size], position)
                    position += size
                if position > start:
                    os.fdatasync(fd)  # the blocks and the size, once, now
                    self.fills += 1
                self._file_end = max(end, position)
            finally:
                os.close(fd)
        finally:
            txn.abort()
            store.leave()
