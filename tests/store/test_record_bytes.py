"""A log record's bytes and keys (`costart.store.record_layout`), checked without LMDB: the
layout, the checksum over the canonical bytes, each defect a reader names, the key
encodings and their limits, and the eventsourcing objects a record becomes.

The checks here are computed independently of the encoder (a hash of the bytes before
the checksum, msgpack's own headers), so an encoder bug does not hide on both sides."""

from __future__ import annotations

from hashlib import blake2b
from uuid import UUID

import msgspec
import pytest
from eventsourcing.persistence import DataError, Notification, StoredEvent

from costart.eventlog.errors import CorruptRecordError, Defect
from costart.eventlog.record_checksum import content_checksum, originator_value
from costart.store import record_layout as records
from costart.store.record_layout import (
    GENESIS,
    MAX_ORIGINATOR_ID_BYTES,
    LogRecord,
    check_fields,
    check_record,
    decode_record,
    encode_record,
    index_key,
    originator_key,
    record_checksum,
    to_notification,
    to_stored_event,
)

OID = UUID("12345678-1234-5678-1234-567812345678")
LOG = "stored_events"


def hashed(data: bytes) -> bytes:
    return blake2b(data, digest_size=16).digest()


def a_record(position: int = 3, oid: UUID | str = OID, prev: bytes = GENESIS) -> bytes:
    event = (index_key(originator_key(oid), 2), originator_value(oid), 2, "t:Ev", b"state")
    value, checksum = encode_record(position, event, prev)
    assert checksum == value[-16:]
    return value


def corrupt(call) -> CorruptRecordError:
    with pytest.raises(CorruptRecordError) as caught:
        call()
    return caught.value


# --- layout ------------------------------------------------------------------------------


def test_genesis_is_the_hash_of_its_label():
    assert hashed(b"costart.store log genesis v1") == GENESIS


def test_a_record_is_a_msgpack_array_of_seven_ending_in_the_checksum_of_what_precedes_it():
    value = a_record()
    assert value[0] == 0x97  # fixarray of 7
    assert value[-18:-16] == b"\xc4\x10"  # bin 8, 16 bytes
    assert value[-16:] == hashed(value[:-16])
    assert msgspec.msgpack.decode(value) == [
        3,
        OID.bytes,
        2,
        "t:Ev",
        b"state",
        GENESIS,
        value[-16:],
    ]
    assert record_checksum(value) == value[-16:]


def test_the_same_event_at_the_same_place_gives_the_same_bytes_and_any_change_other_bytes():
    assert a_record() == a_record()
    others = {a_record(4), a_record(prev=hashed(b"x")), a_record(oid="named")}
    assert len(others) == 3 and a_record() not in others


def test_a_string_originator_is_stored_as_text_and_a_uuid_as_its_bytes():
    assert originator_value(OID) == OID.bytes
    assert originator_value("named") == "named"
    assert msgspec.msgpack.decode(a_record(oid="named"))[1] == "named"


def test_the_content_checksum_covers_the_four_fields_a_writer_knows():
    expected = hashed(msgspec.msgpack.encode([OID.bytes, 2, "t:Ev", b"state"]))
    assert content_checksum(OID, 2, "t:Ev", b"state") == expected
    assert content_checksum("named", 2, "t:Ev", b"state") == hashed(
        msgspec.msgpack.encode(["named", 2, "t:Ev", b"state"])
    )
    assert content_checksum(OID, 3, "t:Ev", b"state") != expected


# --- keys --------------------------------------------------------------------------------


def test_originator_keys_are_prefix_free_by_kind_and_length():
    assert originator_key(OID) == b"\x01" + OID.bytes
    assert originator_key("ab") == b"\x02\x00\x02ab"
    assert originator_key("é") == b"\x02\x00\x02\xc3\xa9"  # the length is in bytes


def test_a_string_originator_of_at_most_500_bytes_is_taken_and_longer_is_refused():
    assert len(originator_key("x" * MAX_ORIGINATOR_ID_BYTES)) == 3 + MAX_ORIGINATOR_ID_BYTES
    assert len(originator_key("é" * 250)) == 503
    for text in ("x" * (MAX_ORIGINATOR_ID_BYTES + 1), "é" * 251):
        with pytest.raises(DataError) as caught:
            originator_key(text)
        assert str(caught.value) == f"originator id longer than 500 bytes: {text!r}"


def test_an_index_key_is_the_originator_key_and_the_big_endian_version():
    assert index_key(b"\x02\x00\x01a", 258) == b"\x02\x00\x01a" + bytes([0, 0, 0, 0, 0, 0, 1, 2])
    assert index_key(b"k", 2**64 - 1) == b"k" + b"\xff" * 8
    assert index_key(b"k", 0) == b"k" + bytes(8)
    for version in (-1, 2**64, "1"):
        with pytest.raises(DataError) as caught:
            index_key(b"k", version)  # type: ignore[arg-type]
        assert str(caught.value) == f"originator version must be an int in [0, 2**64): {version!r}"


# --- defects a reader names --------------------------------------------------------------


def test_a_whole_record_checks_and_decodes_to_its_fields():
    value = a_record(7)
    check_record(value, LOG, 7)
    record = decode_record(value, LOG, 7)
    assert record == LogRecord(7, OID.bytes, 2, "t:Ev", b"state", GENESIS, value[-16:])


def test_a_flipped_byte_is_a_checksum_mismatch_at_the_position_asked():
    value = bytearray(a_record())
    value[10] ^= 1
    for call in (check_record, decode_record):
        error = corrupt(lambda c=call: c(bytes(value), LOG, 3))
        assert (error.log, error.position, error.defect, error.detail) == (
            LOG,
            3,
            Defect.CHECKSUM,
            "",
        )
        assert str(error) == "checksum mismatch at notification id 3 in log 'stored_events'"


def _with_checksum(body: bytes) -> bytes:
    """``body`` (ending in a bin-8 header) with a correct checksum appended."""
    return body + hashed(body)


@pytest.mark.parametrize(
    ("value", "defect"),
    [
        (b"\x97" + b"\xc4\x10" + bytes(16), Defect.FORMAT),  # 19 bytes: too short
        (b"\x97\x00" + b"\xc4\x10" + bytes(16), Defect.CHECKSUM),  # 20 bytes: an envelope
        (b"\x96\x00" + b"\xc4\x10" + bytes(16), Defect.FORMAT),
        (b"\x97\x00" + b"\xc4\x11" + bytes(16), Defect.FORMAT),
        (b"\x97\x00" + b"\xc5\x10" + bytes(16), Defect.FORMAT),
    ],
    ids=["short", "shortest-envelope", "array-header", "bin-length", "bin-kind"],
)
def test_a_bad_checksum_is_diagnosed_as_a_bad_envelope_or_a_mismatch(value, defect):
    error = corrupt(lambda: check_record(value, LOG, 9))
    assert (error.position, error.defect) == (9, defect)
    if defect is Defect.FORMAT:
        assert error.detail == "bad msgpack envelope"


def test_a_record_that_hashes_right_but_does_not_decode_is_malformed():
    body = msgspec.msgpack.encode([1, 2, 3, 4, 5, 6, bytes(16)])[:-16]
    error = corrupt(lambda: decode_record(_with_checksum(body), LOG, 1))
    assert (error.log, error.position, error.defect) == (LOG, 1, Defect.FORMAT)
    assert error.detail.startswith("Expected `str`, got `int`")


def test_a_record_under_another_position_says_where_it_belongs():
    error = corrupt(lambda: decode_record(a_record(5), LOG, 6))
    assert (error.log, error.position, error.defect, error.detail) == (
        LOG,
        6,
        Defect.POSITION,
        "record says 5",
    )


@pytest.mark.parametrize(
    ("originator", "prev", "detail"),
    [
        (7, GENESIS, "bad field types"),
        (OID.bytes, GENESIS[:15], "bad field types"),
        (OID.bytes, GENESIS + b"x", "bad field types"),
        (OID.bytes[:15], GENESIS, "bad UUID length"),
        (OID.bytes + b"x", GENESIS, "bad UUID length"),
        (OID.bytes, GENESIS, None),
        ("named", GENESIS, None),
    ],
    ids=["int-id", "short-prev", "long-prev", "short-uuid", "long-uuid", "uuid", "text"],
)
def test_field_checks_catch_what_a_checksum_cannot(originator, prev, detail):
    record = LogRecord(4, originator, 1, "t:Ev", b"", prev, bytes(16))
    if detail is None:
        check_fields(record, LOG)
        return
    error = corrupt(lambda: check_fields(record, LOG))
    assert (error.log, error.position, error.defect, error.detail) == (
        LOG,
        4,
        Defect.FORMAT,
        detail,
    )


# --- what a record becomes ---------------------------------------------------------------


def test_a_record_becomes_the_notification_and_stored_event_it_was_written_from():
    record = decode_record(a_record(3), LOG, 3)
    assert to_notification(record) == Notification(
        id=3, originator_id=OID, originator_version=2, topic="t:Ev", state=b"state"
    )
    assert to_stored_event(record) == StoredEvent(
        originator_id=OID, originator_version=2, topic="t:Ev", state=b"state"
    )
    named = decode_record(a_record(3, oid="named"), LOG, 3)
    assert to_notification(named).originator_id == "named"
    assert to_stored_event(named).originator_id == "named"


def test_uuids_read_back_are_whole_uuids_shared_between_reads(monkeypatch):
    monkeypatch.setattr(records, "_uuids", {})  # made here, not by an earlier read
    first = to_stored_event(decode_record(a_record(3), LOG, 3)).originator_id
    again = to_notification(decode_record(a_record(4), LOG, 4)).originator_id
    assert first is again
    assert (first.int, first.bytes, str(first), first.is_safe) == (
        OID.int,
        OID.bytes,
        str(OID),
        UUID(int=0).is_safe,
    )
    assert hash(first) == hash(OID) and first == OID


def test_the_shared_uuids_are_bounded(monkeypatch):
    monkeypatch.setattr(records, "_UUID_CACHE_MAX", 2)
    monkeypatch.setattr(records, "_uuids", {})
    raws = [UUID(int=i).bytes for i in range(1, 4)]
    for raw in raws[:2]:
        records._uuid(raw)
    assert len(records._uuids) == 2
    assert records._uuid(raws[2]) == UUID(bytes=raws[2])
    assert list(records._uuids) == [raws[2]]
