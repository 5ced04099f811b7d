"""Giving back the pages of an LMDB map that a one-off scan made resident.

LMDB reads through a shared, read-only mapping of ``data.mdb``: every page a read
touches stays in the process's resident set until the kernel needs the memory. `serve`
starts by reading all of both files once -- the views are verified value by value and
built from the log (ADR 0028) -- so most of its resident memory after start-up is mapped
pages it will not read again (ADR 0050 has the figures). `release_mapped_pages` tells the
kernel this process no longer needs them (``madvise(MADV_DONTNEED)`` on the file's
mappings): they leave the resident set and stay in the page cache, and a later read maps
them again. Nothing is written and no data can be lost: for a shared file mapping the
advice only drops this process's page-table entries.

A server that keeps reading the same map (the views, for every list a client pages
through) makes it resident again bit by bit, and more than it reads: on a fault the
kernel maps the neighbouring pages it holds in the page cache too ("fault-around", up to
16 pages; ``MADV_RANDOM`` does not turn it off), so a listing leaves many times the
bytes it read resident (ADR 0058 has the figures). `ReadBudget` counts what
each read may have made resident -- the value and a fault's neighbours -- and gives the
pages back when that reaches its budget, so what stays resident is bounded by the
budget, not by the file.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Final

from costart.logging_setup import library_logger

log = library_logger("costart.store")

MADV_DONTNEED: Final = 4
MAPS: Final = Path("/proc/self/maps")
FAULT_AROUND_BYTES: Final = 64 * 2**10
"""What one page fault may map of a file held in the page cache (Linux's default
``fault_around_bytes``)."""
DEFAULT_READ_BUDGET_BYTES: Final = 16 * 2**20
"""How much of a map reads may make resident between two releases."""


def _mappings(path: Path, maps: str) -> list[tuple[int, int]]:
    """The address ranges of ``maps`` (the text of ``/proc/self/maps``) that map
    ``path``."""
    target = str(path)
    ranges = []
    for line in maps.splitlines():
        parts = line.split(maxsplit=5)
        if len(parts) == 6 and parts[5] == target:
            start, end = (int(x, 16) for x in parts[0].split("-"))
            ranges.append((start, end))
    return ranges


@functools.cache
def _libc() -> ctypes.CDLL:
    """The C library, looked up once: `find_library` runs ``ldconfig`` (milliseconds),
    and a server releases pages many times (`ReadBudget`)."""
    return ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)


def release_mapped_pages(data_file: Path) -> int:
    """Drop this process's resident pages of every mapping of ``data_file``; the bytes
    of mapping advised. 0 where the system cannot say (no ``/proc``); raises `OSError`
    if the kernel refuses the advice."""
    try:
        maps = MAPS.read_text()
    except OSError:
        return 0
    libc = _libc()
    advised = 0
    for start, end in _mappings(Path(os.path.realpath(data_file)), maps):
        if libc.madvise(ctypes.c_void_p(start), ctypes.c_size_t(end - start), MADV_DONTNEED):
            errno = ctypes.get_errno()
            raise OSError(errno, f"madvise of {data_file}: {os.strerror(errno)}")
        advised += end - start
    log.debug("mapped pages released", file=str(data_file), bytes=advised)
    return advised


class ReadBudget:
    """Gives back this process's mapped pages of ``data_file`` whenever reads through the
    map (`spend`) may have made ``budget_bytes`` of it resident. Thread-safe.

    A release must not meet the map moving: the advice goes to the address ranges
    ``/proc/self/maps`` listed a moment before, and a range unmapped (and perhaps mapped
    again as something else) in between would be advised instead. Whoever moves the map
    (``Environment.set_mapsize``) does it inside `moving_map`, which a release waits for.
    """

    def __init__(self, data_file: Path, budget_bytes: int = DEFAULT_READ_BUDGET_BYTES) -> None:
        if budget_bytes <= 0:
            raise ValueError(f"budget_bytes must be positive, not {budget_bytes}")
        self.data_file = data_file
        self.budget_bytes = budget_bytes
        self.releases = 0  # how many times the pages were given back
        self._mapped = 0
        self._lock = threading.Lock()

    def spend(self, nbytes: int) -> None:
        """A value of ``nbytes`` was read through the map (which may have mapped its
        pages and a fault's neighbours); give the pages back if that used up the budget.
        A release the kernel refuses is logged, not raised: the read it follows was
        whole, only the memory stays."""
        with self._lock:
            self._mapped += nbytes + FAULT_AROUND_BYTES
            if self._mapped < self.budget_bytes:
                return
            self._mapped = 0
            self.releases += 1
            try:
                release_mapped_pages(self.data_file)
            except OSError as error:
                log.warning("mapped pages not released", file=str(self.data_file), error=str(error))

    @contextmanager
    def moving_map(self) -> Iterator[None]:
        """Hold releases off while the map is unmapped and mapped again."""
        with self._lock:
            yield
