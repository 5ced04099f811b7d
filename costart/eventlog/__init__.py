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

from typing import TYPE_CHECKING

from costart._lazy import lazy_exports

if TYPE_CHECKING:
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
    from costart.eventlog.closing import closed_if_failed
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
    from costart.eventlog.restore import fold, fold_log, restore
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
    "closed_if_failed",
    "content_checksum",
    "declaring",
    "encode_state",
    "encode_world",
    "fold",
    "fold_log",
    "gc_paused",
    "log_records",
    "open_replay_log",
    "originator_value",
    "read_events",
    "recorded_form",
    "restore",
]

# Resolved on first use: a command that reads one store loads only the services it
# uses (ADR 0078).
__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "Anchor": "costart.eventlog.anchor",
        "CHECKSUM_SIZE": "costart.eventlog.record_checksum",
        "Capability": "costart.eventlog.capabilities",
        "CorruptRecordError": "costart.eventlog.errors",
        "CorruptSnapshotError": "costart.eventlog.snapshots",
        "DamagedStoreError": "costart.eventlog.errors",
        "Defect": "costart.eventlog.errors",
        "EVENTS_LOG": "costart.eventlog.replay_log",
        "Expectations": "costart.eventlog.rollback",
        "LastKnown": "costart.eventlog.rollback",
        "Lead": "costart.eventlog.backends",
        "LeaseFencedError": "costart.eventlog.errors",
        "LeaseKeeper": "costart.eventlog.lease_keeper",
        "LeaseLike": "costart.eventlog.lease_keeper",
        "LogIntegrityError": "costart.eventlog.replay_log",
        "LogRecorder": "costart.eventlog.capabilities",
        "LogTailLostError": "costart.eventlog.errors",
        "MEMORY_MODULE": "costart.eventlog.backends",
        "MemoryApplicationRecorder": "costart.eventlog.memory",
        "MissingCapabilityError": "costart.eventlog.capabilities",
        "MsgspecMapper": "costart.eventlog.codec",
        "NoLeaseError": "costart.eventlog.backends",
        "OutOfSpaceError": "costart.eventlog.errors",
        "PERSISTENCE_MODULE": "costart.eventlog.backends",
        "PendingWrite": "costart.eventlog.capabilities",
        "Record": "costart.eventlog.capabilities",
        "RecorderSource": "costart.eventlog.event_reading",
        "ReplayLog": "costart.eventlog.replay_log",
        "SNAPSHOTS_LOG": "costart.eventlog.replay_log",
        "SNAPSHOT_SCHEMA": "costart.eventlog.snapshot_schema",
        "SNAPSHOT_STREAM_ID": "costart.eventlog.snapshots",
        "Snapshot": "costart.eventlog.snapshots",
        "SnapshotStore": "costart.eventlog.snapshots",
        "StaleTermError": "costart.eventlog.errors",
        "Standby": "costart.eventlog.standby",
        "StoreBackend": "costart.eventlog.backends",
        "StoreRolledBackError": "costart.eventlog.errors",
        "StoreUnreachableError": "costart.eventlog.errors",
        "WriteChain": "costart.eventlog.capabilities",
        "anchor_at": "costart.eventlog.anchor",
        "backend_at": "costart.eventlog.backends",
        "backend_for": "costart.eventlog.backends",
        "canonical_decode": "costart.eventlog.codec",
        "canonical_encode": "costart.eventlog.codec",
        "capabilities_of": "costart.eventlog.capabilities",
        "chain_hash": "costart.eventlog.anchor",
        "check_reaches": "costart.eventlog.anchor",
        "check_snapshot_reached": "costart.eventlog.anchor",
        "check_term": "costart.eventlog.host_term",
        "claim_term": "costart.eventlog.host_term",
        "closed_if_failed": "costart.eventlog.closing",
        "content_checksum": "costart.eventlog.record_checksum",
        "declaring": "costart.eventlog.capabilities",
        "encode_world": "costart.eventlog.snapshots",
        "fold": "costart.eventlog.restore",
        "fold_log": "costart.eventlog.restore",
        "gc_paused": "costart.eventlog.codec",
        "log_records": "costart.eventlog.event_reading",
        "open_replay_log": "costart.eventlog.backends",
        "originator_value": "costart.eventlog.record_checksum",
        "read_events": "costart.eventlog.event_reading",
        "recorded_form": "costart.eventlog.snapshot_schema",
        "encode_state": "costart.eventlog.snapshot_schema",
        "restore": "costart.eventlog.restore",
    },
)
