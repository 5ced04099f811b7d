"""The views' LMDB environment: its own directory, one named sub-database per view.

Layout (keys are bytes; every value is `canonical_encode`d):

========== ===================================== ==========================================
database   key                                   value
========== ===================================== ==========================================
meta       ``anchor``                            `Anchor`: last processed notification id
                                                 and the log's chain hash there
meta       ``format``                            the layout's version (`FORMAT`)
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

Every stored value ends with a 16-byte BLAKE2b checksum of the view's name, the key and
the value, checked on every read: a damaged value (or a value under a damaged key) raises
`ViewDamagedError` naming the view and the key, never a wrong row. The data file itself
is checked before it is mapped (`costart.lmdbkit.datafile`).
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from hashlib import blake2b
from pathlib import Path
from typing import Any, Final

import lmdb
import msgspec

from costart.eventlog.anchor import Anchor
from costart.eventlog.codec import canonical_decode, canonical_encode
from costart.lmdbkit.datafile import (
    DATA_FILE,
    check_data_file,
    free_bytes,
    is_space_error,
    reserve_lock_file,
)
from costart.lmdbkit.errors import DataFileError, StoreFullError
from costart.lmdbkit.resident import ReadBudget, release_mapped_pages

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
ANCHOR_KEY: Final = b"anchor"
FORMAT_KEY: Final = b"format"
OLD_POSITION_KEY: Final = b"position"
"""Where views of the first layout (no checksums, no anchor) kept their position."""
FORMAT: Final = 2
CHECKSUM_SIZE: Final = 16
VIEW_READERS: Final = 126  # LMDB's default reader table
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


class ViewDamagedError(Exception):
    """A view's stored data failed its check: the message names the view and the key
    (or the file). The log is not affected: the views can be rebuilt from it."""

    def __init__(self, view: str, key: bytes | None, problem: str) -> None:
        self.view = view
        self.key = key
        shown = "" if key is None else f" key {key!r}"
        super().__init__(f"view {view!r}{shown}: {problem}")


def _checksum(view: str, key: bytes, payload: bytes | memoryview) -> bytes:
    h = blake2b(digest_size=CHECKSUM_SIZE)
    h.update(view.encode())
    h.update(len(key).to_bytes(4, "big"))
    h.update(key)
    h.update(payload)
    return h.digest()


def seal(view: str, key: bytes, payload: bytes) -> bytes:
    """The stored form of a value: the payload and its checksum."""
    return payload + _checksum(view, key, payload)


def unseal(view: str, key: bytes, stored: bytes) -> bytes:
    """The payload of a stored value, after checking its checksum."""
    payload = memoryview(stored)[:-CHECKSUM_SIZE]
    if len(stored) < CHECKSUM_SIZE or _checksum(view, key, payload) != stored[-CHECKSUM_SIZE:]:
        raise ViewDamagedError(view, key, "checksum mismatch (the stored value is damaged)")
    return bytes(payload)


class ViewDB:
    """An open views environment. Safe to share between threads of one process; LMDB's
    own lock serializes writers across processes.

    Raises `ViewDamagedError` when the views' data file is not whole or not readable."""

    def __init__(
        self, path: Path | str, map_size: int = DEFAULT_MAP_SIZE, *, readonly: bool = False
    ) -> None:
        """``readonly``: open existing views without writing anything, not even a lock
        file (a copy examined by `costart replay verify`)."""
        self.path = Path(path)
        self.readonly = readonly
        # Reads page the map in (and its neighbours); a list paged through by clients
        # would leave the views resident whole in a long-running server (ADR 0058).
        self.budget = ReadBudget(self.path / DATA_FILE)
        if not readonly:
            self.path.mkdir(parents=True, exist_ok=True)
        try:
            check_data_file(self.path)
            if not readonly:
                reserve_lock_file(self.path, VIEW_READERS)
            self.env = lmdb.open(
                str(self.path),
                map_size=map_size,
                max_dbs=len(DATABASES) + 1,
                max_readers=VIEW_READERS,
                subdir=True,
                readonly=readonly,
                lock=not readonly,
                create=not readonly,
            )
        except DataFileError as error:
            raise ViewDamagedError("(file)", None, str(error)) from None
        except lmdb.Error as error:
            if is_space_error(error):
                free = free_bytes(self.path)
                raise StoreFullError(str(self.path), 2 * 4096, free, str(error)) from None
            raise ViewDamagedError("(file)", None, f"{self.path}: {error}") from None
        try:
            self.dbs: dict[str, Any] = {
                name: self.env.open_db(name.encode(), create=not readonly) for name in DATABASES
            }
            self._check_format()
        except lmdb.Error as error:
            self.env.close()
            raise ViewDamagedError("(file)", None, f"{self.path}: {error}") from None
        except ViewDamagedError:
            self.env.close()
            raise

    def _check_format(self) -> None:
        """Stamp new views with the layout's version; views of the first layout (a
        rebuildable cache from before checksums) are emptied, to be rebuilt."""
        with self.env.begin(write=not self.readonly) as txn:
            meta = self.dbs["meta"]
            stored = txn.get(FORMAT_KEY, db=meta)
            if stored is not None:
                found = self.decode("meta", FORMAT_KEY, unseal("meta", FORMAT_KEY, stored), int)
                if found != FORMAT:
                    raise ViewDamagedError("meta", FORMAT_KEY, f"layout {found}, not {FORMAT}")
                return
            if txn.get(ANCHOR_KEY, db=meta) is not None:
                raise ViewDamagedError("meta", FORMAT_KEY, "missing beside an anchor")
            if self.readonly:
                raise ViewDamagedError("meta", FORMAT_KEY, "missing: views of an older layout")
            if txn.get(OLD_POSITION_KEY, db=meta) is not None:
                for db in self.dbs.values():
                    txn.drop(db, delete=False)
            txn.put(FORMAT_KEY, seal("meta", FORMAT_KEY, canonical_encode(FORMAT)), db=meta)

    def release_mapped_pages(self) -> None:
        """Give back this process's resident pages of the views' map: a one-off scan
        (the startup check) made them resident, and later reads map what they need again
        (ADR 0050). Raises `OSError` if the kernel refuses the advice."""
        release_mapped_pages(self.path / DATA_FILE)

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
        with self.budget.moving_map():
            self.env.set_mapsize(size)

    def read(self) -> Any:
        """A read-only transaction (a consistent snapshot of every view)."""
        return self.env.begin(write=False)

    def write(self) -> Any:
        return self.env.begin(write=True)

    # --- typed access inside a transaction ---------------------------------------------

    def decode(self, db: str, key: bytes, payload: bytes, type_: type[Any]) -> Any:
        """A checked payload decoded; a payload that does not decode is damage too."""
        try:
            return canonical_decode(payload, type_)
        except msgspec.MsgspecError as error:
            raise ViewDamagedError(db, key, f"does not decode: {error}") from None

    def get(self, txn: Any, db: str, key: bytes, type_: type[Any]) -> Any:
        try:
            raw = txn.get(key, db=self.dbs[db])
        except lmdb.Error as error:  # a damaged page of the views' B-tree
            raise ViewDamagedError(db, key, f"cannot be read: {error}") from None
        if raw is None:
            return None
        self.budget.spend(len(key) + len(raw))
        return self.decode(db, key, unseal(db, key, raw), type_)

    def put(self, txn: Any, db: str, key: bytes, value: Any) -> None:
        txn.put(key, seal(db, key, canonical_encode(value)), db=self.dbs[db])

    def delete(self, txn: Any, db: str, key: bytes) -> None:
        txn.delete(key, db=self.dbs[db])

    def scan(self, txn: Any, db: str, prefix: bytes = b"") -> Iterator[tuple[bytes, bytes]]:
        """(key, checked payload) pairs whose key starts with ``prefix``, in key order."""
        try:
            cursor = txn.cursor(db=self.dbs[db])
            if not cursor.set_range(prefix):
                return
            for key, value in cursor:
                if not key.startswith(prefix):
                    return
                self.budget.spend(len(key) + len(value))
                yield bytes(key), unseal(db, bytes(key), bytes(value))
        except lmdb.Error as error:  # a damaged page of the views' B-tree
            raise ViewDamagedError(db, prefix, f"cannot be scanned: {error}") from None

    def anchor(self, txn: Any) -> Anchor:
        """The log position the views were built to, and the log's chain hash there."""
        found = self.get(txn, "meta", ANCHOR_KEY, Anchor)
        return Anchor(0) if found is None else found

    def read_anchor(self) -> Anchor:
        """`anchor` in a read transaction of its own."""
        with self.read() as txn:
            return self.anchor(txn)

    def position(self, txn: Any) -> int:
        return self.anchor(txn).position

    def set_anchor(self, txn: Any, anchor: Anchor) -> None:
        self.put(txn, "meta", ANCHOR_KEY, anchor)

    def clear(self, txn: Any) -> None:
        """Empty every view and the anchor (for a rebuild); the layout stamp stays."""
        for db in self.dbs.values():
            txn.drop(db, delete=False)
        txn.put(FORMAT_KEY, seal("meta", FORMAT_KEY, canonical_encode(FORMAT)), db=self.dbs["meta"])

    def verify(self) -> int:
        """Check every stored value of every view; raise `ViewDamagedError` at the first
        bad one. Returns how many were checked."""
        checked = 0
        with self.read() as txn:
            for name in DATABASES:
                for _ in self.scan(txn, name):
                    checked += 1
        return checked

    def dump(self) -> dict[str, list[tuple[bytes, bytes]]]:
        """Every key and value of every view (tests compare rebuilt and live views)."""
        with self.read() as txn:
            return {name: list(self.scan(txn, name)) for name in DATABASES}


def stored_anchor(path: Path) -> Anchor | None:
    """The anchor of the views in ``path``, read without writing anything (not even a
    lock file); None when there are no views there, or they were built to nothing.
    `ViewDamagedError` when they cannot be read."""
    if not (path / "data.mdb").exists() and not (path / "lock.mdb").exists():
        return None
    db = ViewDB(path, readonly=True)
    try:
        anchor = db.read_anchor()
    finally:
        db.close()
    return anchor if anchor.position > 0 else None
