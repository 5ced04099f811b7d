"""The backend-neutral services of the controller's event log (docs/design.md §2, ADR 0053).

What every store backend shares, over any of the eventsourcing library's recorders: the
one codec (`MsgspecMapper`, canonical encoding), whole-controller snapshots and their
schema, reading the log as ``(position, event)`` (`read_events`, `RecorderSource`),
restoring the state, tail anchors and rollback checks, the record checksum, the
host-term fence, the in-memory recorder, the lease keeper and the warm standby; what a
backend's recorders can do (`Capability`, declared on `LogRecorder`) and the one
registry of backends (`backend_for`), and the contract of a log opened read-only for
replay (`ReplayLog`, opened by its backend through `open_replay_log`). The backends (`costart.store`
for LMDB, `costart.pgstore` for PostgreSQL) import from here; nothing here imports them.
"""

from costart.eventlog.anchor import (
    Anchor,
    anchor_at,
    chain_hash,
    check_reaches,
    check_snapshot_reached,
)
from costart.eventlog.backends import (
    MEMORY_MODULE,
    PERSISTENCE_MODULE,
    Lead,
    NoLeaseError,
    StoreBackend,
    backend_at,
    backend_for,
    open_replay_log,
)
from costart.eventlog.capabilities import (
    Capability,
    LogRecorder,
    MissingCapabilityError,
    PendingWrite,
    Record,
    WriteChain,
    capabilities_of,
    declaring,
)
from costart.eventlog.codec import MsgspecMapper, canonical_decode, canonical_encode, gc_paused
from costart.eventlog.errors import (
    CorruptRecordError,
    DamagedStoreError,
    Defect,
    LeaseFencedError,
    LogTailLostError,
    OutOfSpaceError,
    StaleTermError,
    StoreRolledBackError,
    StoreUnreachableError,
)
from costart.eventlog.event_reading import RecorderSource, log_records, read_events
from costart.eventlog.host_term import check_term, claim_term
from costart.eventlog.lease_keeper import LeaseKeeper, LeaseLike
from costart.eventlog.memory import MemoryApplicationRecorder
from costart.eventlog.record_checksum import CHECKSUM_SIZE, content_checksum, originator_value
from costart.eventlog.replay_log import EVENTS_LOG, SNAPSHOTS_LOG, LogIntegrityError, ReplayLog
from costart.eventlog.restore import fold, restore
from costart.eventlog.rollback import Expectations, LastKnown
from costart.eventlog.snapshot_schema import SNAPSHOT_SCHEMA, encode_state, recorded_form
from costart.eventlog.snapshots import (
    SNAPSHOT_STREAM_ID,
    CorruptSnapshotError,
    Snapshot,
    SnapshotStore,
    encode_world,
)
from costart.eventlog.standby import Standby

__all__ = [
    "CHECKSUM_SIZE",
    "EVENTS_LOG",
    "MEMORY_MODULE",
    "PERSISTENCE_MODULE",
    "SNAPSHOTS_LOG",
    "SNAPSHOT_SCHEMA",
    "SNAPSHOT_STREAM_ID",
    "Anchor",
    "Capability",
    "CorruptRecordError",
    "CorruptSnapshotError",
    "DamagedStoreError",
    "Defect",
    "Expectations",
    "LastKnown",
    "Lead",
    "LeaseFencedError",
    "LeaseKeeper",
    "LeaseLike",
    "LogIntegrityError",
    "LogRecorder",
    "LogTailLostError",
    "MemoryApplicationRecorder",
    "MissingCapabilityError",
    "MsgspecMapper",
    "NoLeaseError",
    "OutOfSpaceError",
    "PendingWrite",
    "Record",
    "RecorderSource",
    "ReplayLog",
    "Snapshot",
    "SnapshotStore",
    "StaleTermError",
    "Standby",
    "StoreBackend",
    "StoreRolledBackError",
    "StoreUnreachableError",
    "WriteChain",
    "anchor_at",
    "backend_at",
    "backend_for",
    "canonical_decode",
    "canonical_encode",
    "capabilities_of",
    "chain_hash",
    "check_reaches",
    "check_snapshot_reached",
    "check_term",
    "claim_term",
    "content_checksum",
    "declaring",
    "encode_state",
    "encode_world",
    "fold",
    "gc_paused",
    "log_records",
    "open_replay_log",
    "originator_value",
    "read_events",
    "recorded_form",
    "restore",
]
