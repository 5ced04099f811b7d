"""Byte layout of what the store keeps in LMDB: log records, keys and the hash chain.

A log record is a msgpack array ``[id, originator_id, originator_version, topic,
state, prev, checksum]`` (a ``LogRecord`` struct with ``array_like=True``):

* ``originator_id`` is the 16 raw bytes of a UUID, or the text of a string id, so
  the type an event was written with is the type it is read back as;
* ``prev`` is the checksum of the record before it in notification order (or
  ``GENESIS`` for the first record): the records form a hash chain;
* ``checksum`` is BLAKE2b-128 of the record's *canonical bytes*, which are the
  record's own encoding minus its last 16 bytes (the checksum's payload).

Because the checksum is always a 16-byte msgpack ``bin 8`` at the very end, a
reader checks a record without decoding it: hash ``value[:-16]`` and compare with
``value[-16:]``. The encoding is deterministic (msgspec, fixed field order, ints
in their shortest form), so the same event at the same position and chain head
always yields the same bytes.

Keys are big-endian fixed-width integers so LMDB's byte order is numeric order:
the log is keyed by notification id, the originator index by
``originator key + version``, where the originator key is prefix-free (a kind
byte, and a length for strings) so one originator's versions are contiguous.
"""

from __future__ import annotations

import struct
from hashlib import blake2b
from typing import Any, Final
from uuid import UUID

import lmdb
import msgspec
from eventsourcing.persistence import DataError, Notification, StoredEvent

from costart.eventlog.errors import CorruptRecordError, Defect
from costart.eventlog.record_checksum import CHECKSUM_SIZE

GENESIS: Final = blake2b(b"costart.store log genesis v1", digest_size=CHECKSUM_SIZE).digest()
"""The ``prev`` of the first record of every log."""

# msgpack: fixarray of 7, and the `bin 8` header of a 16-byte checksum.
_ARRAY7: Final = 0x97
_CHECKSUM_HEADER: Final = b"\xc4\x10"
_PLACEHOLDER: Final = bytes(CHECKSUM_SIZE)
# A string originator key: kind byte + 2-byte length + text + 8-byte version
# must fit LMDB's default maximum key size of 511 bytes.
MAX_ORIGINATOR_ID_BYTES: Final = 500

_U64: Final = struct.Struct(">Q")
pack_u64 = _U64.pack
"""Big-endian fixed-width key for notification ids and versions."""
unpack_u64 = _U64.unpack


class LogRecord(msgspec.Struct, array_like=True, frozen=True, gc=False):
    """One event as stored in a log. See the module docstring for the layout."""

    id: int
    originator_id: Any  # bytes (a UUID's 16 bytes) or str; msgspec can't union them
    originator_version: int
    topic: str
    state: bytes
    prev: bytes
    checksum: bytes


_encode = msgspec.msgpack.Encoder().encode
_decode = msgspec.msgpack.Decoder(LogRecord).decode


def originator_key(originator_id: UUID | str) -> bytes:
    """Prefix-free key of an originator in the index (without the version)."""
    if isinstance(originator_id, UUID):
        return b"\x01" + originator_id.bytes
    raw = originator_id.encode("utf-8")
    if len(raw) > MAX_ORIGINATOR_ID_BYTES:
        msg = f"originator id longer than {MAX_ORIGINATOR_ID_BYTES} bytes: {originator_id!r}"
        raise DataError(msg)
    return b"\x02" + len(raw).to_bytes(2, "big") + raw


def index_key(okey: bytes, version: int) -> bytes:
    """Index key of one event: originator key + big-endian version."""
    try:
        return okey + pack_u64(version)
    except struct.error:
        msg = f"originator version must be an int in [0, 2**64): {version!r}"
        raise DataError(msg) from None


PreparedEvent = tuple[bytes, bytes | str, int, str, bytes]
"""An event ready to write: (index key, originator as stored, version, topic, state)."""


def encode_record(notification_id: int, event: PreparedEvent, prev: bytes) -> tuple[bytes, bytes]:
    """Return ``(value, checksum)`` of the record of ``event`` at ``notification_id``."""
    # Encode with a zero checksum so the array header already counts 7 items,
    # then hash everything but the placeholder's payload and swap it in.
    canonical = _encode(
        (notification_id, event[1], event[2], event[3], event[4], prev, _PLACEHOLDER)
    )[:-CHECKSUM_SIZE]
    checksum = blake2b(canonical, digest_size=CHECKSUM_SIZE).digest()
    return canonical + checksum, checksum


def _diagnose(value: bytes, log: str, position: int) -> CorruptRecordError:
    """Name what is wrong with a record whose checksum does not match."""
    if (
        len(value) < 2 + len(_CHECKSUM_HEADER) + CHECKSUM_SIZE
        or value[0] != _ARRAY7
        or value[-18:-16] != _CHECKSUM_HEADER
    ):
        return CorruptRecordError(log, position, Defect.FORMAT, "bad msgpack envelope")
    return CorruptRecordError(log, position, Defect.CHECKSUM)


def check_record(value: bytes, log: str, position: int) -> None:
    """Raise ``CorruptRecordError`` unless ``value`` hashes to its stored checksum.

    The envelope (array header, checksum header) is part of the hashed bytes,
    so one comparison covers it; only a failure is diagnosed further.
    """
    if (
        blake2b(memoryview(value)[:-CHECKSUM_SIZE], digest_size=CHECKSUM_SIZE).digest()
        != (value[-CHECKSUM_SIZE:])
    ):
        raise _diagnose(value, log, position)


def record_checksum(value: bytes) -> bytes:
    """The checksum stored in a record (its last 16 bytes), not verified."""
    return value[-CHECKSUM_SIZE:]


def decode_record(value: bytes, log: str, position: int) -> LogRecord:
    """Check and decode the record stored under notification id ``position``."""
    # check_record inlined: this is the per-record cost of every read.
    if (
        blake2b(memoryview(value)[:-CHECKSUM_SIZE], digest_size=CHECKSUM_SIZE).digest()
        != (value[-CHECKSUM_SIZE:])
    ):
        raise _diagnose(value, log, position)
    try:
        record = _decode(value)
    except (msgspec.DecodeError, msgspec.ValidationError) as e:
        raise CorruptRecordError(log, position, Defect.FORMAT, str(e)) from None
    if record.id != position:
        raise CorruptRecordError(log, position, Defect.POSITION, f"record says {record.id}")
    return record


_FRESH_HASH: Final = blake2b(digest_size=CHECKSUM_SIZE)
"""A record checksum's hash before any bytes: `scan_plain` copies it per record. Never fed."""


def scan_plain(
    cursor: lmdb.Cursor[bytes],
    log: str,
    expect: int,
    prev: bytes | None,
    limit: int,
    *,
    stop: int | None = None,
) -> tuple[list[LogRecord], int, bytes | None]:
    """Read up to ``limit`` consecutive checked records from the cursor's position.

    The cursor must be positioned at ``expect``'s key (or the first key after
    it). Checks each record's checksum, that its id is ``expect`` (gap-free),
    and that it links to ``prev`` (``None``: first link unchecked). Stops before
    ``stop`` is exceeded. Returns the records, the next expected id and the
    last checksum, so the caller can continue in a later transaction.

    The plain reference of the store's read (`record_scan.scan` checks a chunk of
    records in compiled code and hands any record it does not accept back to this
    one, which names the defect). It is a hot loop, so checks are inlined, keys are
    only decoded to explain a failure, and the cursor yields values only.
    """
    records: list[LogRecord] = []
    append = records.append
    decode = _decode
    fresh_hash = _FRESH_HASH.copy
    for value in cursor.iternext(keys=False):
        if stop is not None and expect > stop:
            break
        # A copy of a fresh hash (no parameters to parse and set up per record), fed a
        # bytes slice (copying a record's few hundred bytes costs less than building and
        # slicing a view): replay's hot loop (ADR 0130). The same BLAKE2b-128.
        hashed = fresh_hash()
        hashed.update(value[:-CHECKSUM_SIZE])
        if hashed.digest() != value[-CHECKSUM_SIZE:]:
            raise _misplaced(cursor, log, expect) or _diagnose(value, log, expect)
        try:
            record = decode(value)
        except (msgspec.DecodeError, msgspec.ValidationError) as e:
            raise _misplaced(cursor, log, expect) or CorruptRecordError(
                log, expect, Defect.FORMAT, str(e)
            ) from None
        if record.id != expect:
            raise _misplaced(cursor, log, expect) or CorruptRecordError(
                log, expect, Defect.POSITION, f"record says {record.id}"
            )
        if prev is not None and record.prev != prev:
            raise CorruptRecordError(log, expect, Defect.CHAIN)
        prev = record.checksum
        expect += 1
        append(record)
        if len(records) == limit:
            break
    return records, expect, prev


def _misplaced(cursor: lmdb.Cursor[bytes], log: str, expect: int) -> CorruptRecordError | None:
    """A gap error if the cursor is not at ``expect``'s key."""
    position = unpack_u64(cursor.key())[0]
    if position != expect:
        return CorruptRecordError(log, expect, Defect.GAP, f"next is {position}")
    return None


def check_fields(record: LogRecord, log: str) -> None:
    """Field checks a checksum cannot give (a forged record hashes fine): for verify."""
    if type(record.originator_id) not in (bytes, str) or len(record.prev) != CHECKSUM_SIZE:
        raise CorruptRecordError(log, record.id, Defect.FORMAT, "bad field types")
    if isinstance(record.originator_id, bytes) and len(record.originator_id) != 16:
        raise CorruptRecordError(log, record.id, Defect.FORMAT, "bad UUID length")


def _new_uuid(raw: bytes) -> UUID:
    # UUID(bytes=...) validates its arguments in Python; the bytes were written
    # from a UUID and are covered by the checksum, so build it directly.
    u = object.__new__(UUID)
    object.__setattr__(u, "int", int.from_bytes(raw, "big"))
    object.__setattr__(u, "is_safe", _UNKNOWN)
    return u


_UNKNOWN: Final = UUID(int=0).is_safe
# Replays see the same aggregate ids over and over; UUIDs are immutable, so
# share them. Bounded by clearing (cheap, and any entry can be rebuilt).
_uuids: dict[bytes, UUID] = {}
_UUID_CACHE_MAX: Final = 1 << 16


def _uuid(raw: bytes) -> UUID:
    u = _uuids.get(raw)
    if u is None:
        if len(_uuids) >= _UUID_CACHE_MAX:
            _uuids.clear()
        u = _uuids[raw] = _new_uuid(raw)
    return u


_new = object.__new__


def to_notification(record: LogRecord) -> Notification:
    """The eventsourcing ``Notification`` of a record."""
    # Filling __dict__ directly is about 3x cheaper than the frozen dataclass's
    # __init__ (which calls object.__setattr__ per field); the result is equal.
    n = _new(Notification)
    d = n.__dict__
    oid = record.originator_id
    d["originator_id"] = _uuid(oid) if type(oid) is bytes else oid
    d["originator_version"] = record.originator_version
    d["topic"] = record.topic
    d["state"] = record.state
    d["id"] = record.id
    return n


def to_stored_event(record: LogRecord) -> StoredEvent:
    """The eventsourcing ``StoredEvent`` of a record."""
    e = _new(StoredEvent)
    d = e.__dict__
    oid = record.originator_id
    d["originator_id"] = _uuid(oid) if type(oid) is bytes else oid
    d["originator_version"] = record.originator_version
    d["topic"] = record.topic
    d["state"] = record.state
    return e


class LogHandles:
    """The two named databases of one log: records by id, and the originator index."""

    __slots__ = ("index", "name", "records")

    def __init__(self, name: str, records: lmdb._Database, index: lmdb._Database) -> None:
        self.name = name
        self.records = records
        self.index = index
