"""The store's read of consecutive records: a chunk checked in compiled code (ADR 0155).

`scan` reads values off the cursor a chunk at a time and hands each chunk to
`costart.store._chunkcheck.check`, which checks every record's BLAKE2b checksum,
envelope, position and chain link and builds its `LogRecord` in one call: what
`record_layout.scan_plain` does per record in Python, without the per-record
objects (a hash, a slice, a digest) and calls. The compiled check stops at the first
record it does not accept, for any reason, and raises nothing for a record's bytes;
`scan` puts the cursor back on that record and reads on with `scan_plain`, which
names the defect and its position (or accepts a record in an encoding the compiled
check does not read). So both give the same records and the same `CorruptRecordError`;
tests compare them on random and damaged logs.

Where the compiled module is not built (a source tree nobody installed), `scan` is
`scan_plain`: the same results, slower. `COMPILED` says which; the package's tests and
the replay benchmark fail when it is False (ADR 0155).
"""

from __future__ import annotations

from itertools import islice
from typing import TYPE_CHECKING, Final

from costart.store.record_layout import LogRecord, scan_plain

if TYPE_CHECKING:
    from types import ModuleType

    import lmdb

_chunkcheck: ModuleType | None
try:
    from costart.store import _chunkcheck
except ImportError:  # not built: see the module docstring
    _chunkcheck = None

COMPILED: Final = _chunkcheck is not None
"""Whether `scan` checks records in compiled code (else it is `scan_plain`)."""

CHUNK: Final = 1024
"""Values read off the cursor per compiled call: bounds the values held beside the
records (each value's bytes until its record is built)."""


def scan_compiled(
    cursor: lmdb.Cursor[bytes],
    log: str,
    expect: int,
    prev: bytes | None,
    limit: int,
    *,
    stop: int | None = None,
    chunk: int = CHUNK,
) -> tuple[list[LogRecord], int, bytes | None]:
    """`scan_plain`'s contract (same arguments, records and errors; having read
    ``limit`` records the cursor is on the last, as there), with chunks of records
    checked by `_chunkcheck.check` (``chunk`` values a call; tests vary it)."""
    if _chunkcheck is None:
        msg = "costart.store._chunkcheck is not built"
        raise RuntimeError(msg)
    check = _chunkcheck.check
    want = limit if stop is None else min(limit, stop - expect + 1)
    records: list[LogRecord] = []
    if want <= 0:
        return records, expect, prev
    values = cursor.iternext(keys=False)
    before = 0  # values the cursor passed before this chunk's first (0 or 1: see below)
    while len(records) < want:
        # The chunk's first value is the cursor's current one at the start, then the
        # one after it: the anchor is where `check` stopping is found again.
        anchor = cursor.key()
        size = min(chunk, want - len(records))
        read = list(islice(values, size))
        checked, prev = check(read, expect, prev, LogRecord)
        records += checked
        expect += len(checked)
        if len(checked) < len(read):
            # Back to the record `check` did not accept; the plain scan reads on from it.
            cursor.set_key(anchor)
            for _ in range(before + len(checked)):
                cursor.next()
            rest, expect, prev = scan_plain(
                cursor, log, expect, prev, limit - len(records), stop=stop
            )
            records += rest
            break
        if len(read) < size:
            break  # the end of the log
        before = 1
    return records, expect, prev


scan: Final = scan_compiled if COMPILED else scan_plain
"""The store's read of up to ``limit`` checked records (`record_layout.scan_plain`'s
contract): compiled when built."""
