"""The errors the PostgreSQL store adds to the library's."""

from __future__ import annotations

from costart.eventlog.errors import LeaseFencedError, StaleTermError

FENCED_SQLSTATE = "CSF01"
"""The SQLSTATE our epoch check raises inside the append transaction (class ``CS``:
costart's own, used by no PostgreSQL condition)."""


TERM_SQLSTATE = "CSF02"
"""The SQLSTATE our host-term check raises (an older term than the stored one)."""


class FencedError(LeaseFencedError):
    """`LeaseFencedError` of the PostgreSQL store: the epoch is checked by the append
    function in the append's own transaction. Not an ``OperationalError``: the library
    retries those, and a fenced write must never be retried."""


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
