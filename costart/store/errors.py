"""The error only the LMDB store raises: a write fenced by the lease epoch kept in the
environment. A data file that is not whole and a full disk or map are the LMDB kit's
(`costart.lmdbkit.errors`, shared with the views); the backend-neutral ones
(`CorruptRecordError`, `LogTailLostError`, ...) are in `costart.eventlog.errors`."""

from __future__ import annotations

from eventsourcing.persistence import OperationalError

from costart.eventlog.errors import LeaseFencedError


class FencedError(OperationalError, LeaseFencedError):
    """`LeaseFencedError` of the LMDB store: the epoch is checked in the write
    transaction that would append."""
