"""LMDB persistence for eventsourcing: ``PERSISTENCE_MODULE=costart.store``.

An append-only, hash-chained, checksummed event log per application in one LMDB
environment, with group commit, automatic map growth, tailing subscriptions, and a
leadership lease whose epoch fences every append (ADR 0009), or the host's leadership
term instead (ADR 0027).
Settings (environment, optionally prefixed with the application name):
``COSTART_LMDB_PATH``, ``COSTART_LMDB_MAP_SIZE``, ``COSTART_LMDB_DURABILITY``
(``sync``/``async``), ``COSTART_LMDB_POLL_INTERVAL``.

This module must define exactly one ``InfrastructureFactory`` subclass,
``Factory``: ``InfrastructureFactory.construct`` looks for it here.
"""

from costart.store.anchor import (
    Anchor,
    HashChainedLog,
    PlacedRowLog,
    RecordHashes,
    anchor_at,
    chain_hash,
    check_reaches,
    check_snapshot_reached,
)
from costart.store.codec import MsgspecMapper, canonical_decode, canonical_encode, gc_paused
from costart.store.committer import WriteChain
from costart.store.datafile import (
    DATA_FILE,
    check_data_file,
    check_not_lost,
    forget_new_environment,
    free_bytes,
    is_space_error,
    reserve_lock_file,
)
from costart.store.errors import (
    CorruptRecordError,
    DamagedStoreError,
    DataFileError,
    Defect,
    FencedError,
    LogTailLostError,
    StaleTermError,
    StoreFullError,
    StoreRolledBackError,
)
from costart.store.factory import Factory
from costart.store.host_term import HostTermFencing, check_term, claim_term
from costart.store.keeper import LeaseKeeper, LeaseLike
from costart.store.lease import Lease, LeaseRecord
from costart.store.lmdbenv import LmdbStore, open_store
from costart.store.memory import MemoryApplicationRecorder
from costart.store.reader import LogReader, iter_log, open_readonly
from costart.store.reading import RecorderSource, log_records, read_events
from costart.store.recorders import (
    LmdbAggregateRecorder,
    LmdbApplicationRecorder,
    LmdbProcessRecorder,
    LmdbTrackingRecorder,
)
from costart.store.records import GENESIS, LogRecord, content_checksum
from costart.store.resident import release_mapped_pages
from costart.store.rollback import Expectations, LastKnown
from costart.store.settings import StoreSettings
from costart.store.snapshot_schema import SNAPSHOT_SCHEMA, recorded_form
from costart.store.snapshots import (
    SNAPSHOT_STREAM_ID,
    CorruptSnapshotError,
    Snapshot,
    SnapshotStore,
    encode_world,
)
from costart.store.standby import Standby, open_factory
from costart.store.verify import LogSummary, Problem, VerifyReport, iter_verified, verify_log

__all__ = [
    "DATA_FILE",
    "GENESIS",
    "SNAPSHOT_SCHEMA",
    "SNAPSHOT_STREAM_ID",
    "Anchor",
    "CorruptRecordError",
    "CorruptSnapshotError",
    "DamagedStoreError",
    "DataFileError",
    "Defect",
    "Expectations",
    "Factory",
    "FencedError",
    "HashChainedLog",
    "HostTermFencing",
    "LastKnown",
    "Lease",
    "LeaseKeeper",
    "LeaseLike",
    "LeaseRecord",
    "LmdbAggregateRecorder",
    "LmdbApplicationRecorder",
    "LmdbProcessRecorder",
    "LmdbStore",
    "LmdbTrackingRecorder",
    "LogReader",
    "LogRecord",
    "LogSummary",
    "LogTailLostError",
    "MemoryApplicationRecorder",
    "MsgspecMapper",
    "PlacedRowLog",
    "Problem",
    "RecordHashes",
    "RecorderSource",
    "Snapshot",
    "SnapshotStore",
    "StaleTermError",
    "Standby",
    "StoreFullError",
    "StoreRolledBackError",
    "StoreSettings",
    "VerifyReport",
    "WriteChain",
    "anchor_at",
    "canonical_decode",
    "canonical_encode",
    "chain_hash",
    "check_data_file",
    "check_not_lost",
    "check_reaches",
    "check_snapshot_reached",
    "check_term",
    "claim_term",
    "content_checksum",
    "encode_world",
    "forget_new_environment",
    "free_bytes",
    "gc_paused",
    "is_space_error",
    "iter_log",
    "iter_verified",
    "log_records",
    "open_factory",
    "open_readonly",
    "open_store",
    "read_events",
    "recorded_form",
    "release_mapped_pages",
    "reserve_lock_file",
    "verify_log",
]
