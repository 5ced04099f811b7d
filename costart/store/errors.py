"""Errors raised by the LMDB store beyond the eventsourcing persistence errors."""

from __future__ import annotations

from enum import StrEnum

from eventsourcing.persistence import DataError, OperationalError, PersistenceError


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


class CorruptRecordError(DataError):
    """A record read from the log failed an integrity check.

    Deliberately not an ``IntegrityError``: callers treat that one as an
    optimistic-concurrency conflict and retry, which would hide corruption.
    """

    def __init__(self, log: str, position: int, defect: Defect, detail: str = "") -> None:
        self.log = log
        """Name of the log (the application's events or snapshots log)."""
        self.position = position
        """Notification id (position in the log) of the faulty record."""
        self.defect = defect
        self.detail = detail
        msg = f"{defect.value} at notification id {position} in log {log!r}"
        if detail:
            msg += f": {detail}"
        super().__init__(msg)

    def __reduce__(self) -> tuple[type[CorruptRecordError], tuple[str, int, Defect, str]]:
        return type(self), (self.log, self.position, self.defect, self.detail)


class FencedError(OperationalError):
    """An append carried a lease epoch that is no longer the stored one: another process
    took the lease, so this writer was deposed and must not write again."""

    def __init__(self, epoch: int, current: int) -> None:
        self.epoch = epoch
        self.current = current
        super().__init__(
            f"write fenced: it carries lease epoch {epoch}, the store is at epoch {current}"
        )

    def __reduce__(self) -> tuple[type[FencedError], tuple[int, int]]:
        return type(self), (self.epoch, self.current)


class StaleTermError(PersistenceError):
    """An append (or a claim) carried the host's leadership term ``term``, and the log
    already has a newer one (``current``): the host elected another leader, so this
    writer was deposed and must not write again (ADR 0025).

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
