"""The host's leadership term as a fence on the log (ADR 0027).

An embedding host controller runs its own leader election and numbers its terms; the
costart Controller it runs can be given that term instead of costart's own lease
(``Controller(..., term=N)``). A store that can be fenced by it declares so by
implementing `HostTermFencing`:

* `claim_term` records the term as the log's newest, in one write transaction, unless
  the log already has a newer one (then `StaleTermError`, nothing written); from then
  on every append of that recorder carries the term;
* every append that carries a term is checked *inside its write transaction*: an older
  term than the stored one is refused (`StaleTermError`), a newer one is stored with
  the append. So once a new leader claimed its term, no append of an older one lands
  -- the same guarantee as the lease epoch (ADR 0009), with the number coming from the
  host. Terms only grow; the stored term is 0 before any claim.
"""

from __future__ import annotations

from abc import ABC, abstractmethod


class HostTermFencing(ABC):
    """A recorder whose appends the host's leadership term fences."""

    term: int | None
    """The term this recorder's appends carry (None: not fenced by a term)."""

    @abstractmethod
    def claim_term(self, term: int) -> None:
        """Record ``term`` as the log's newest host term (a no-op if it already is)
        and carry it on every later append; `StaleTermError` if the log already has a
        newer term."""

    @abstractmethod
    def stored_term(self) -> int:
        """The log's newest host term (0: none claimed yet)."""


def check_term(term: object) -> int:
    """``term`` if it is a positive integer, else a `ValueError` naming it."""
    if isinstance(term, bool) or not isinstance(term, int) or term <= 0:
        raise ValueError(f"term: the host's leadership term is a positive integer, not {term!r}")
    return term


def claim_term(recorder: object, term: int) -> None:
    """Claim ``term`` on ``recorder`` if its store can be fenced by the host's term,
    else a `ValueError` saying which store cannot."""
    if not isinstance(recorder, HostTermFencing):
        raise ValueError(
            f"term: the store's recorder {type(recorder).__name__} cannot be fenced by the "
            "host's term (the LMDB and PostgreSQL stores can)"
        )
    recorder.claim_term(term)
