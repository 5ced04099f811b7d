"""Whole-controller snapshots (docs/design.md §6): the `World` at a log position, canonically
encoded, checksummed and tied to the log, kept in the library's "snapshots" recorder.

Each snapshot is one stored record of a fixed stream (``originator_version`` = the log
position), so any eventsourcing persistence module can hold them and a write is atomic.
Reading falls back from a corrupt newest snapshot to an older one and says so.
"""

from __future__ import annotations

import contextlib
import hashlib
from uuid import uuid5

import msgspec
from eventsourcing.persistence import AggregateRecorder, IntegrityError, StoredEvent

from costart.domain.ids import COSTART_NAMESPACE
from costart.domain.world import World
from costart.eventlog.capabilities import Capability, capabilities_of
from costart.eventlog.codec import canonical_decode, canonical_encode, gc_paused
from costart.eventlog.errors import CorruptRecordError
from costart.eventlog.snapshot_schema import (
    SNAPSHOT_SCHEMA,
    decode_state,
    encode_state,
    restorable,
)

SNAPSHOT_STREAM_ID = uuid5(COSTART_NAMESPACE, "controller-snapshots")
SNAPSHOT_TOPIC = "costart.snapshot:v1"
_SCAN_LIMIT = 64  # how many older snapshots to try before giving up


class CorruptSnapshotError(Exception):
    """A stored snapshot fails its checksum or does not decode."""

    def __init__(self, position: int, why: str) -> None:
        self.position = position
        super().__init__(f"snapshot at position {position} is corrupt: {why}")


class Snapshot(msgspec.Struct, frozen=True, gc=False):
    """The encoded state at ``position``; ``log_hash`` is the chain hash of the log record
    at that position when the store keeps a hash chain (ties the two together)."""

    position: int
    state_checksum: bytes
    state: bytes
    log_hash: bytes | None = None
    schema: int = 1
    """The snapshot schema that encoded ``state`` (`costart.eventlog.snapshot_schema`);
    snapshots written before the field existed are schema 1."""

    def world(self, *, check: bool = True) -> World:
        """Decode the state after checking its checksum. ``check=False`` only when the
        store has just verified these very bytes (a checksummed record, read back)."""
        if check and _checksum(self.state) != self.state_checksum:
            raise CorruptSnapshotError(self.position, "state checksum mismatch")
        try:
            with gc_paused():
                world = decode_state(self.state, self.schema)
        except msgspec.MsgspecError as error:
            raise CorruptSnapshotError(self.position, f"state does not decode: {error}") from None
        if world.position != self.position:
            raise CorruptSnapshotError(self.position, f"state is at position {world.position}")
        return world

    def restorable_world(self, *, check: bool = True) -> World:
        """`world`, if this snapshot's schema holds the whole state of this release;
        else `OlderSchemaSnapshotError` (restore replays the log instead)."""
        if not restorable(self.schema):
            raise OlderSchemaSnapshotError(self.position, self.schema)
        return self.world(check=check)


class OlderSchemaSnapshotError(CorruptSnapshotError):
    """A sound snapshot whose schema does not hold the whole state of this release: it
    is still compared by `replay verify`, but not restored from."""

    def __init__(self, position: int, schema: int) -> None:
        super().__init__(
            position,
            f"written under snapshot schema {schema}, which lacks state this release keeps "
            f"(schema {SNAPSHOT_SCHEMA}); the log is replayed instead",
        )


def _checksum(data: bytes) -> bytes:
    return hashlib.blake2b(data, digest_size=32).digest()


def encode_world(world: World) -> bytes:
    """The canonical bytes replay compares against (a snapshot stores `encode_state`'s
    compact form of the same values)."""
    return canonical_encode(world)


class SnapshotStore:
    """Snapshots in an `AggregateRecorder` (purpose "snapshots")."""

    def __init__(self, recorder: AggregateRecorder) -> None:
        self.recorder = recorder
        # A store that checks every record's checksum as it reads it (ours on LMDB) has
        # verified a snapshot's bytes already: restoring hashes them once, not twice.
        self._verified_reads = Capability.VERIFIED_READS in capabilities_of(recorder)

    def write(self, world: World, log_hash: bytes | None = None) -> Snapshot:
        """Store the state at ``world.position``. Writing the same position twice keeps the
        first (a snapshot of a position is a function of the log up to it)."""
        state = encode_state(world)
        snapshot = Snapshot(world.position, _checksum(state), state, log_hash, SNAPSHOT_SCHEMA)
        record = StoredEvent(
            originator_id=SNAPSHOT_STREAM_ID,
            originator_version=world.position,
            topic=SNAPSHOT_TOPIC,
            state=canonical_encode(snapshot),
        )
        with contextlib.suppress(IntegrityError):
            self.recorder.insert_events([record])
        return snapshot

    def _decode(self, record: StoredEvent) -> Snapshot:
        try:
            snapshot = canonical_decode(record.state, Snapshot)
        except msgspec.MsgspecError as error:
            raise CorruptSnapshotError(record.originator_version, f"record: {error}") from None
        if snapshot.position != record.originator_version:
            raise CorruptSnapshotError(record.originator_version, "position mismatch")
        return snapshot

    def positions(self) -> list[int]:
        records = self.recorder.select_events(SNAPSHOT_STREAM_ID)
        return [r.originator_version for r in records]

    def read(self, position: int) -> Snapshot:
        records = self.recorder.select_events(
            SNAPSHOT_STREAM_ID, gt=position - 1, lte=position, limit=1
        )
        if not records:
            raise KeyError(f"no snapshot at position {position}")
        return self._decode(records[0])

    def all(self) -> list[Snapshot | CorruptSnapshotError]:
        """Every stored snapshot in position order; corrupt ones as their error."""
        found: list[Snapshot | CorruptSnapshotError] = []
        for record in self.recorder.select_events(SNAPSHOT_STREAM_ID):
            try:
                snapshot = self._decode(record)
                snapshot.world()
                found.append(snapshot)
            except CorruptSnapshotError as error:
                found.append(error)
        return found

    def newest_valid(
        self, at_or_before: int | None = None
    ) -> tuple[Snapshot | None, World | None, list[CorruptSnapshotError]]:
        """The newest snapshot that verifies, its state, and the corrupt ones skipped."""
        skipped: list[CorruptSnapshotError] = []
        below = at_or_before
        for _ in range(_SCAN_LIMIT):
            # One at a time: a snapshot is large, and the newest usually verifies.
            try:
                records = self.recorder.select_events(
                    SNAPSHOT_STREAM_ID, lte=below, desc=True, limit=1
                )
            except CorruptRecordError as error:
                # The store's own record check failed: skip the record it names.
                if error.originator_version is None:
                    raise
                skipped.append(CorruptSnapshotError(error.originator_version, str(error)))
                below = error.originator_version - 1
                continue
            if not records:
                break
            try:
                snapshot = self._decode(records[0])
                world = snapshot.restorable_world(check=not self._verified_reads)
                return snapshot, world, skipped
            except CorruptSnapshotError as error:
                skipped.append(error)
            below = records[0].originator_version - 1
        return None, None, skipped
