"""Tail anchoring (ADR 0028): what was built from the log names the log's end it saw.

The views and every snapshot record the log position they were built to and, when the
store names its records by a hash, the hash of the record at that position (the chain
hash on LMDB; the placed row checksum on PostgreSQL, ADR 0048). An opener
checks that the log still reaches that position with that hash before it trusts either:
a log that ends earlier lost its tail (a rolled-back or replaced data file), and a log
whose record there has another hash is not the history they were built from. Either is
refused with `LogTailLostError`; nothing is rebuilt over the evidence unless asked.
"""

from __future__ import annotations

import msgspec
from eventsourcing.persistence import ApplicationRecorder

from costart.eventlog.capabilities import Capability, declaring
from costart.eventlog.errors import CorruptRecordError, Defect, LogTailLostError


class Anchor(msgspec.Struct, frozen=True, array_like=True):
    """A log position and the chain hash of its record (None: the store keeps no chain,
    or the position is 0)."""

    position: int
    log_hash: bytes | None = None


def chain_hash(recorder: ApplicationRecorder, position: int) -> bytes | None:
    """The hash of the record at ``position`` when the store names records by one (the
    chain hash on LMDB, the placed row checksum on PostgreSQL), else None."""
    hashes = declaring(recorder, Capability.RECORD_HASHES)
    if position <= 0 or hashes is None:
        return None
    return hashes.record_hash(position)


def anchor_at(recorder: ApplicationRecorder, position: int) -> Anchor:
    return Anchor(position, chain_hash(recorder, position))


def short_hash(value: bytes | None) -> str:
    return "none" if value is None else value.hex()[:16]


def check_reaches(recorder: ApplicationRecorder, anchor: Anchor, built: str) -> None:
    """Raise `LogTailLostError` unless the log reaches ``anchor`` (position and hash).

    ``built`` says what recorded the anchor, for the message: "the views were built to"
    or "the snapshot was taken at" (the position follows)."""
    if anchor.position <= 0:
        return
    end = recorder.max_notification_id() or 0
    where = f"{built} {anchor.position} (hash {short_hash(anchor.log_hash)})"
    if end < anchor.position:
        raise LogTailLostError(
            f"log ends at {end}, {where}: the log lost its tail",
            position=anchor.position,
            log_end=end,
        )
    hashes = declaring(recorder, Capability.RECORD_HASHES)
    if anchor.log_hash is None or hashes is None:
        return
    try:
        actual = hashes.record_hash(anchor.position)
    except CorruptRecordError as error:
        if error.defect is not Defect.GAP:
            raise
        raise LogTailLostError(
            f"the log has no record at {anchor.position}, {where}: the log lost records",
            position=anchor.position,
            log_end=end,
        ) from None
    # A record that carries no hash (a PostgreSQL row of an earlier release) can only be
    # compared by position; a checksum removed from a newer row is found when it is read.
    if actual is not None and actual != anchor.log_hash:
        raise LogTailLostError(
            f"the log's record at {anchor.position} has hash {short_hash(actual)}, {where}: "
            "the log was replaced or rewritten since",
            position=anchor.position,
            log_end=end,
        )


def check_snapshot_reached(
    recorder: ApplicationRecorder, position: int, log_hash: bytes | None
) -> None:
    """`check_reaches` for the snapshot a controller or standby starts from."""
    check_reaches(recorder, Anchor(position, log_hash), "the snapshot was taken at")
