"""LMDB persistence for eventsourcing: ``PERSISTENCE_MODULE=costart.store``.

The LMDB backend only: what every backend shares (codec, snapshots, reading the log,
anchors, the lease keeper, the standby) is `costart.eventlog`; what every LMDB
environment shares (data-file checks, their errors, page release) is `costart.lmdbkit`.

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

from costart.store.errors import FencedError
from costart.store.factory import Factory
from costart.store.ha import open_factory
from costart.store.integrity import IntegrityReport, LogSummary, Problem, iter_verified, verify_log
from costart.store.lease import Lease, LeaseRecord
from costart.store.lmdbenv import LmdbStore, open_store
from costart.store.record_layout import GENESIS, LogRecord
from costart.store.recorders import (
    LmdbAggregateRecorder,
    LmdbApplicationRecorder,
    LmdbProcessRecorder,
    LmdbTrackingRecorder,
)
from costart.store.settings import StoreSettings
from costart.store.whole_log import LogReader, iter_log, open_readonly

__all__ = [
    "GENESIS",
    "Factory",
    "FencedError",
    "IntegrityReport",
    "Lease",
    "LeaseRecord",
    "LmdbAggregateRecorder",
    "LmdbApplicationRecorder",
    "LmdbProcessRecorder",
    "LmdbStore",
    "LmdbTrackingRecorder",
    "LogReader",
    "LogRecord",
    "LogSummary",
    "Problem",
    "StoreSettings",
    "iter_log",
    "iter_verified",
    "open_factory",
    "open_readonly",
    "open_store",
    "verify_log",
]
