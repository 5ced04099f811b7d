"""Giving back the pages of an LMDB map that a one-off scan made resident.

LMDB reads through a shared, read-only mapping of ``data.mdb``: every page a read
touches stays in the process's resident set until the kernel needs the memory. `serve`
starts by reading all of both files once -- the views are verified value by value and
built from the log (ADR 0028) -- so with 10,000 live groups 320 MB of its resident memory
were mapped pages it would not read again (ADR 0050). `release_mapped_pages` tells the
kernel this process no longer needs them (``madvise(MADV_DONTNEED)`` on the file's
mappings): they leave the resident set and stay in the page cache, and a later read maps
them again. Nothing is written and no data can be lost: for a shared file mapping the
advice only drops this process's page-table entries.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
from pathlib import Path
from typing import Final

import structlog

log = structlog.get_logger("costart.store")

MADV_DONTNEED: Final = 4
MAPS: Final = Path("/proc/self/maps")


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


def release_mapped_pages(data_file: Path) -> int:
    """Drop this process's resident pages of every mapping of ``data_file``; the bytes
    of mapping advised. 0 where the system cannot say (no ``/proc``); raises `OSError`
    if the kernel refuses the advice."""
    try:
        maps = MAPS.read_text()
    except OSError:
        return 0
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    advised = 0
    for start, end in _mappings(Path(os.path.realpath(data_file)), maps):
        if libc.madvise(ctypes.c_void_p(start), ctypes.c_size_t(end - start), MADV_DONTNEED):
            errno = ctypes.get_errno()
            raise OSError(errno, f"madvise of {data_file}: {os.strerror(errno)}")
        advised += end - start
    log.debug("mapped pages released", file=str(data_file), bytes=advised)
    return advised
