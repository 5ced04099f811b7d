"""A store rolled back as a whole is refused by whoever saw it newer (ADR 0048).

A backup or a volume snapshot restored over the store brings back an older log *with*
the views, snapshots and lease that were built beside it: every check inside the store
(checksums, the hash chain, tail anchoring of ADR 0028) agrees, because the copy is
consistent. Only what lives outside the copy can tell it is older:

* **the host's truth** (`LastKnown`): the embedding host keeps, in its own store, the
  position (and chain hash) of the last append it saw acknowledged and the leadership
  term it claimed; given back to `bootstrap`, a log that no longer reaches that position
  with that hash, or whose stored term is older, is refused naming both;
* **views kept elsewhere**: views not restored with the log (PostgreSQL's local views, or
  an LMDB directory whose log alone was restored) record the position they were built to;
* **what a running process saw**: a standby remembers the position and hash it read the
  log to and the newest lease epoch it saw; a log that falls behind them, or an epoch
  that goes back, is a store rolled back under it.

Each is an `Expectations` check run before the opener reads or writes anything. A store
rolled back while nobody holds such evidence (every copy and every process restarted
together, no host position) looks exactly like a store that stopped there: that is not
detectable from the store, and ADR 0048 says so.
"""

from __future__ import annotations

from typing import Final

import msgspec
from eventsourcing.persistence import ApplicationRecorder

from costart.eventlog.anchor import Anchor, check_reaches
from costart.eventlog.capabilities import Capability, declaring
from costart.eventlog.errors import LogTailLostError, StoreRolledBackError

HOST_SAW: Final = "the host last saw the log at"
VIEWS_BUILT: Final = "the views were built to"


class LastKnown(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """What the host last saw of a log (`Controller.last_known`): the position of its
    newest acknowledged append, the log's chain hash there (None on a store without a
    chain, or at 0) and the host term the controller wrote under (None: no term).

    The host keeps it in its own replicated state (``msgspec.json.encode`` it) and gives
    it back to `bootstrap` on the next start."""

    position: int
    log_hash: bytes | None = None
    term: int | None = None

    def __post_init__(self) -> None:
        if isinstance(self.position, bool) or self.position < 0:
            raise ValueError(f"last_known.position: a log position is >= 0, not {self.position}")
        if self.term is not None and self.term <= 0:
            raise ValueError(f"last_known.term: a host term is positive, not {self.term}")


class Expectations(msgspec.Struct, frozen=True, kw_only=True):
    """What an opener knows of the log from outside it, checked before it trusts it."""

    last_known: LastKnown | None = None
    views: Anchor | None = None

    def check(self, recorder: ApplicationRecorder) -> None:
        """Raise `LogTailLostError` (`StoreRolledBackError` for the host's truth) unless
        the log reaches every expectation."""
        if self.views is not None:
            check_reaches(recorder, self.views, VIEWS_BUILT)
        known = self.last_known
        if known is None:
            return
        try:
            check_reaches(recorder, Anchor(known.position, known.log_hash), HOST_SAW)
        except LogTailLostError as error:
            raise StoreRolledBackError(
                f"{error}; the store was rolled back (restored from an older copy?)",
                position=known.position,
                log_end=error.log_end,
            ) from None
        fenced = declaring(recorder, Capability.HOST_TERM)
        if known.term is not None and fenced is not None:
            stored = fenced.stored_term()
            if stored < known.term:
                raise StoreRolledBackError(
                    f"the store's host term is {stored}, the host last saw term {known.term} "
                    "written to it: the store was rolled back (restored from an older copy?)",
                    position=known.position,
                    log_end=recorder.max_notification_id() or 0,
                )
