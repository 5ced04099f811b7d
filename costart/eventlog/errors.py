"""Errors of the event log that every backend raises, beyond the eventsourcing persistence
errors: a damaged or rolled-back store, a corrupt record, a write fenced by the host's term,
a write that met a full disk."""

from __future__ import annotations

from enum import StrEnum

from eventsourcing.persistence import DataError, OperationalError, PersistenceError

StoreUnreachableError = OperationalError
"""A store's database did not answer (no connection could be made in time): the
library's own error, named here so entry points catch it without importing the library."""


class Defect(StrEnum):
    """What is wrong with a stored record."""

    CHECKSUM = "checksum mismatch"
    """The record's bytes no longer hash to the checksum stored with them."""
    FORMAT = "malformed record"
    """The record's envelope is not a well-formed log record."""
    POSITION = "record stored at the wrong position"
    """The notification id inside the record differs from its key."""
    CHAIN = "broken chain link"
    """The record's `prev` is not the checksum of the record before it."""
    GAP = "missing notification id"
    """A notification id is absent between two present ones."""
    INDEX = "index entry inconsistent with the log"
    """An originator index entry points at no record, or at the wrong one."""


class DamagedStoreError(DataError):
    """The store cannot be trusted as it is: a record, a file or the log's end is not
    what the rest of the store says. Never retried, never written over; the message names
    what is wrong and where."""


class LogTailLostError(DamagedStoreError):
    """The log does not reach a position (with the chain hash) that something built from
    it recorded -- the views or a snapshot: the log lost its tail or was replaced."""

    def __init__(self, message: str, *, position: int, log_end: int) -> None:
        self.position = position
        self.log_end = log_end
        super().__init__(message)

    def __reduce__(self) -> tuple[object, ...]:
        return _tail_lost, (str(self), self.position, self.log_end)


def _tail_lost(message: str, position: int, log_end: int) -> LogTailLostError:
    return LogTailLostError(message, position=position, log_end=log_end)


class CorruptRecordError(DamagedStoreError):
    """A record read from the log failed an integrity check.

    Deliberately not an ``IntegrityError``: callers treat that one as an
    optimistic-concurrency conflict and retry, which would hide corruption.
    """

    def __init__(
        self,
        log: str,
        position: int,
        defect: Defect,
        detail: str = "",
        originator_version: int | None = None,
    ) -> None:
        self.log = log
        """Name of the log (the application's events or snapshots log)."""
        self.position = position
        """Notification id (position in the log) of the faulty record."""
        self.defect = defect
        self.detail = detail
        self.originator_version = originator_version
        """The version the index names for the record, when read through the index (a
        snapshot's log position): lets a reader skip past the bad record."""
        msg = f"{defect.value} at notification id {position} in log {log!r}"
        if detail:
            msg += f": {detail}"
        super().__init__(msg)

    def __reduce__(
        self,
    ) -> tuple[type[CorruptRecordError], tuple[str, int, Defect, str, int | None]]:
        return type(self), (
            self.log,
            self.position,
            self.defect,
            self.detail,
            self.originator_version,
        )


class LeaseFencedError(PersistenceError):
    """An append carried a lease epoch that is no longer the stored one: another process
    took the lease, so this writer was deposed and must not write again (ADR 0009).
    Each backend that keeps a lease raises its own subclass (``FencedError``)."""

    def __init__(self, epoch: int, current: int) -> None:
        self.epoch = epoch
        self.current = current
        super().__init__(
            f"write fenced: it carries lease epoch {epoch}, the store is at epoch {current}"
        )

    def __reduce__(self) -> tuple[type[LeaseFencedError], tuple[int, int]]:
        return type(self), (self.epoch, self.current)


class OutOfSpaceError(OperationalError):
    """A write met a full disk (or a map that may not grow further): nothing of it was
    written. Each backend whose writes can meet one raises its own subclass (the LMDB
    store's and the views' ``StoreFullError``); entry points catch this one, so they
    need not import a backend to say "out of space"."""


class StaleTermError(PersistenceError):
    """An append (or a claim) carried the host's leadership term ``term``, and the log
    already has a newer one (``current``): the host elected another leader, so this
    writer was deposed and must not write again (ADR 0027).

    Raised by both stores. Not an ``OperationalError``: the library retries those, and
    a fenced write must never be retried."""

    def __init__(self, term: int, current: int) -> None:
        self.term = term
        self.current = current
        super().__init__(
            f"write fenced: it carries host term {term}, the log is at host term {current}"
        )

    def __reduce__(self) -> tuple[type[StaleTermError], tuple[int, int]]:
        return type(self), (self.term, self.current)


class StoreRolledBackError(LogTailLostError):
    """The store is older than something its opener saw of it -- a lease epoch or host
    term that went back, or a log behind the host's last known position: the whole store
    was rolled back (a restored backup, a volume snapshot) under the opener (ADR 0048)."""
