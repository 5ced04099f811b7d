"""The errors the PostgreSQL store adds to the library's."""

from __future__ import annotations

from eventsourcing.persistence import PersistenceError

from costart.store.errors import StaleTermError

FENCED_SQLSTATE = "CSF01"
"""The SQLSTATE our epoch check raises inside the append transaction (class ``CS``:
costart's own, used by no PostgreSQL condition)."""


TERM_SQLSTATE = "CSF02"
"""The SQLSTATE our host-term check raises (an older term than the stored one)."""


class FencedError(PersistenceError):
    """An append carried a lease epoch that is no longer the stored one: another process
    took the lease, so this writer was deposed and must not write again.

    Same shape as the LMDB store's fencing error (ADR 0009), so a `LogWriter` stops on
    either the same way. Not an ``OperationalError``: the library retries those, and a
    fenced write must never be retried.
    """

    def __init__(self, epoch: int, current: int) -> None:
        self.epoch = epoch
        self.current = current
        super().__init__(
            f"write fenced: it carries lease epoch {epoch}, the store is at epoch {current}"
        )

    def __reduce__(self) -> tuple[type[FencedError], tuple[int, int]]:
        return type(self), (self.epoch, self.current)


def fenced_error(
    error: BaseException, epoch: int, term: int = 0
) -> FencedError | StaleTermError | None:
    """The `FencedError` (lease epoch) or `StaleTermError` (host term) that ``error`` (as
    the library raised it) stands for, if any."""
    cause: BaseException | None = error
    while cause is not None:
        sqlstate = getattr(cause, "sqlstate", None)
        if sqlstate in (FENCED_SQLSTATE, TERM_SQLSTATE):
            diag = getattr(cause, "diag", None)
            detail = int(getattr(diag, "message_detail", None) or "0")
            if sqlstate == TERM_SQLSTATE:
                return StaleTermError(term, detail)
            return FencedError(epoch, detail)
        cause = cause.__cause__
    return None
