"""The views' LMDB environment: its own directory, one named sub-database per view.

Layout (keys are bytes; every value is `canonical_encode`d):

========== ===================================== ==========================================
database   key                                   value
========== ===================================== ==========================================
meta       ``position``                          last processed notification id (int)
gstate     group id                              `GroupState` (the fold's input)
mstate     member id                             `MemberState`
groups     group id                              `GroupView`
order      submission seq (8 bytes, big-endian)  group id
names      group name                            id of the newest group of that name
members    group id ``/`` index (4 bytes BE)     `MemberView`
pend       group id ``/`` position (8 bytes BE)  `PendEntry`
timeline   group id ``/`` position (8 bytes BE)  `TimelineEntry`
holds      node NUL group id NUL member NUL idx  `HoldView`
gholds     group id                              the group's ``holds`` keys (list of bytes)
stats      histogram name                        `Histogram`
========== ===================================== ==========================================

Big-endian integers make LMDB's bytewise key order the numeric order, so scans come out
in spec, submission or log order without sorting.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import lmdb

from costart.store.codec import canonical_decode, canonical_encode

DATABASES: Final = (
    "meta",
    "gstate",
    "mstate",
    "groups",
    "order",
    "names",
    "members",
    "pend",
    "timeline",
    "holds",
    "gholds",
    "stats",
    "nodes",
)
POSITION_KEY: Final = b"position"
DEFAULT_MAP_SIZE: Final = 256 * 2**20
MAX_MAP_SIZE: Final = 64 * 2**30

_U32 = struct.Struct(">I")
_U64 = struct.Struct(">Q")


def u32(value: int) -> bytes:
    return _U32.pack(value)


def u64(value: int) -> bytes:
    return _U64.pack(value)


def sub_key(group_id: str, suffix: bytes) -> bytes:
    """A key under a group's prefix (``id/``): a prefix scan gives the group's rows."""
    return group_id.encode() + b"/" + suffix


def hold_key(node: str, group_id: str, member: str, index: int, kind: str) -> bytes:
    return b"\x00".join(
        (node.encode(), group_id.encode(), member.encode(), u32(index), kind.encode())
    )


class ViewDB:
    """An open views environment. Safe to share between threads of one process; LMDB's
    own lock serializes writers across processes."""

    def __init__(self, path: Path | str, map_size: int = DEFAULT_MAP_SIZE) -> None:
        self.path = Path(path)
        self.path.mkdir(parents=True, exist_ok=True)
        self.env = lmdb.open(
            str(self.path), map_size=map_size, max_dbs=len(DATABASES) + 1, subdir=True
        )
        self.dbs: dict[str, Any] = {name: self.env.open_db(name.encode()) for name in DATABASES}

    def close(self) -> None:
        self.env.close()

    def __enter__(self) -> ViewDB:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def grow(self) -> None:
        """Double the map (called after `lmdb.MapFullError`, with no transaction open)."""
        size = int(self.env.info()["map_size"]) * 2
        if size > MAX_MAP_SIZE:
            raise lmdb.MapFullError(f"views map would exceed {MAX_MAP_SIZE} bytes")
        self.env.set_mapsize(size)

    def read(self) -> Any:
        """A read-only transaction (a consistent snapshot of every view)."""
        return self.env.begin(write=False)

    def write(self) -> Any:
        return self.env.begin(write=True)

    # --- typed access inside a transaction ---------------------------------------------

    def get(self, txn: Any, db: str, key: bytes, type_: type[Any]) -> Any:
        raw = txn.get(key, db=self.dbs[db])
        return None if raw is None else canonical_decode(raw, type_)

    def put(self, txn: Any, db: str, key: bytes, value: Any) -> None:
        txn.put(key, canonical_encode(value), db=self.dbs[db])

    def delete(self, txn: Any, db: str, key: bytes) -> None:
        txn.delete(key, db=self.dbs[db])

    def scan(self, txn: Any, db: str, prefix: bytes = b"") -> Iterator[tuple[bytes, bytes]]:
        """(key, raw value) pairs whose key starts with ``prefix``, in key order."""
        cursor = txn.cursor(db=self.dbs[db])
        if not cursor.set_range(prefix):
            return
        for key, value in cursor:
            if not key.startswith(prefix):
                return
            yield bytes(key), bytes(value)

    def position(self, txn: Any) -> int:
        raw = txn.get(POSITION_KEY, db=self.dbs["meta"])
        return 0 if raw is None else canonical_decode(raw, int)

    def set_position(self, txn: Any, position: int) -> None:
        txn.put(POSITION_KEY, canonical_encode(position), db=self.dbs["meta"])

    def clear(self, txn: Any) -> None:
        """Empty every view and the tracking position (for a rebuild)."""
        for db in self.dbs.values():
            txn.drop(db, delete=False)

    def dump(self) -> dict[str, list[tuple[bytes, bytes]]]:
        """Every key and value of every view (tests compare rebuilt and live views)."""
        with self.read() as txn:
            return {name: list(self.scan(txn, name)) for name in DATABASES}
