"""The host's leadership term as a fence on the log (ADR 0027).

An embedding host controller runs its own leader election and numbers its terms; the
costart Controller it runs can be given that term instead of costart's own lease
(``bootstrap(..., term=N)``, which opens the Controller's `LogSession` with it). A store
that can be fenced by it declares so with `Capability.HOST_TERM`
(`costart.eventlog.capabilities`):

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

from costart.eventlog.capabilities import Capability, declaring


def check_term(term: object) -> int:
    """``term`` if it is a positive integer, else a `ValueError` naming it."""
    if isinstance(term, bool) or not isinstance(term, int) or term <= 0:
        raise ValueError(f"term: the host's leadership term is a positive integer, not {term!r}")
    return term


def claim_term(recorder: object, term: int) -> None:
    """Claim ``term`` on ``recorder`` if its store can be fenced by the host's term,
    else a `ValueError` saying which store cannot."""
    fenced = declaring(recorder, Capability.HOST_TERM)
    if fenced is None:
        raise ValueError(
            f"term: the store's recorder {type(recorder).__name__} cannot be fenced by the "
            "host's term (the LMDB and PostgreSQL stores can)"
        )
    fenced.claim_term(term)
