"""What a store backend's recorder can do beyond the eventsourcing library's recorder
contract, declared in one place (ADR 0053).

A recorder of a costart backend subclasses `LogRecorder` and names its capabilities in
``capabilities``; every caller asks `capabilities_of(recorder)` and never probes for a
method. A recorder that is not a `LogRecorder` (the library's SQLite or POPO recorders)
has none, and the callers take the library's plain paths. Declaring a capability
without its method, or a method without its capability, is refused when the class is
defined (`LogRecorder.__init_subclass__`); tests/contract checks each declared
capability's behaviour on every backend.
"""

from __future__ import annotations

from abc import ABC
from collections.abc import Iterator, Sequence
from enum import Flag, auto
from typing import ClassVar, Final, Protocol

from eventsourcing.persistence import StoredEvent


class Capability(Flag):
    """One thing a recorder can do beyond the library's contract (see `LogRecorder`)."""

    NONE = 0
    VERIFIED_READS = auto()
    """Every record read is checked against its checksum before it is returned (a bad
    one raises `CorruptRecordError`): a reader need not hash the bytes again."""
    RECORD_CURSOR = auto()
    """`LogRecorder.iter_records`: the log's records in position order through the
    store's own cursor, without building notification objects, gap-free and checked as
    the store checks every read."""
    RECORD_HASHES = auto()
    """`LogRecorder.record_hash`: a hash that names the record at a position, so an
    anchor can tell the record it was built to from another one there (LMDB: the chain
    hash, committing to every record before it; PostgreSQL: the placed row checksum,
    committing to that record at that position, ADR 0048)."""
    DEFERRED_INSERTS = auto()
    """`LogRecorder.insert_events_deferred`: queue a write now, wait for it later, so
    concurrent writers share one fsync (group commit, ADR 0011)."""
    HOST_TERM = auto()
    """`LogRecorder.claim_term` and `LogRecorder.stored_term`: appends fenced by the
    host's leadership term (ADR 0027)."""


class Record(Protocol):
    """A stored event as a log reader sees it: its position, topic and stored body."""

    @property
    def id(self) -> int: ...

    @property
    def topic(self) -> str: ...

    @property
    def state(self) -> bytes: ...


class WriteChain:
    """A sequence of deferred writes where each was computed on top of the ones before it
    (one controller's commands). Once one of them fails, every later one fails too
    instead of landing in the log without its predecessor (fail-stop).

    ``epoch``: the lease epoch the writer holds; every write of the chain carries it and
    is fenced against the stored one. None: the writer holds no lease (not fenced).
    """

    __slots__ = ("broken", "epoch")

    def __init__(self, epoch: int | None = None) -> None:
        self.broken: BaseException | None = None
        self.epoch = epoch


class PendingWrite(Protocol):
    """A queued write (`LogRecorder.insert_events_deferred`)."""

    def wait(self) -> list[int]:
        """Block until the write is committed; its positions. Call exactly once: the
        queue may be waiting on this caller to lead the shared commit."""
        ...


class LogRecorder(ABC):  # noqa: B024 (optional capabilities, checked per subclass)
    """The capabilities of a costart backend's recorder: the contract each one keeps.

    ``capabilities`` names what the recorder does; each named capability comes with its
    method (the defaults here raise `MissingCapabilityError`):

    * `Capability.VERIFIED_READS` -- no method: a promise about every read.
    * `Capability.RECORD_CURSOR` -- ``iter_records(start)`` yields every record from
      position ``start`` (values below 1 read from 1) in position order, each with
      ``id``, ``topic`` and ``state``; a missing or damaged record raises
      `CorruptRecordError` naming its position, never a shorter log.
    * `Capability.RECORD_HASHES` -- ``record_hash(position)`` is the hash of the record
      at ``position`` (None: that record carries none, e.g. a row of an earlier
      release); `CorruptRecordError` with defect GAP when there is no such record.
      The same record always has the same hash.
    * `Capability.DEFERRED_INSERTS` -- ``insert_events_deferred(events, chain)``
      queues the events in the caller's order and returns a `PendingWrite`; positions
      are assigned in queue order. A failed write breaks ``chain``: every later write
      of the chain fails too and nothing of it is written. A write whose chain carries
      a lease epoch that is no longer the stored one is refused.
    * `Capability.HOST_TERM` -- ``claim_term(term)`` records ``term`` as the log's
      newest host term (a no-op when it already is) and carries it on every later
      append of this recorder; `StaleTermError` (nothing written) when the log already
      has a newer term; an append carrying an older term than the stored one is refused
      with `StaleTermError`. ``stored_term()`` is the newest claimed term (0: none);
      ``term`` the term this recorder's appends carry (None: not fenced by one).
    """

    capabilities: ClassVar[Capability] = Capability.NONE
    term: int | None = None

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        for capability, names in METHODS.items():
            declared = capability in cls.capabilities
            for name in names:
                implemented = getattr(cls, name) is not getattr(LogRecorder, name)
                if declared != implemented:
                    raise TypeError(
                        f"{cls.__name__}: {name} is "
                        + ("missing for" if declared else "implemented without")
                        + f" its declared capability {capability.name}"
                    )

    def iter_records(self, start: int = 1) -> Iterator[Record]:
        raise MissingCapabilityError(self, Capability.RECORD_CURSOR)

    def record_hash(self, position: int) -> bytes | None:
        raise MissingCapabilityError(self, Capability.RECORD_HASHES)

    def insert_events_deferred(
        self, stored_events: Sequence[StoredEvent], chain: WriteChain
    ) -> PendingWrite:
        raise MissingCapabilityError(self, Capability.DEFERRED_INSERTS)

    def claim_term(self, term: int) -> None:
        raise MissingCapabilityError(self, Capability.HOST_TERM)

    def stored_term(self) -> int:
        raise MissingCapabilityError(self, Capability.HOST_TERM)


METHODS: Final[dict[Capability, tuple[str, ...]]] = {
    Capability.VERIFIED_READS: (),
    Capability.RECORD_CURSOR: ("iter_records",),
    Capability.RECORD_HASHES: ("record_hash",),
    Capability.DEFERRED_INSERTS: ("insert_events_deferred",),
    Capability.HOST_TERM: ("claim_term", "stored_term"),
}
"""The methods that come with each capability."""


class MissingCapabilityError(NotImplementedError):
    """A capability's method was called on a recorder that does not declare it."""

    def __init__(self, recorder: object, capability: Capability) -> None:
        super().__init__(
            f"the store's recorder {type(recorder).__name__} does not declare {capability.name}"
        )


def capabilities_of(recorder: object) -> Capability:
    """What ``recorder`` declares (`Capability.NONE` for one that is not a `LogRecorder`)."""
    return recorder.capabilities if isinstance(recorder, LogRecorder) else Capability.NONE


def declaring(recorder: object, capability: Capability) -> LogRecorder | None:
    """``recorder`` as a `LogRecorder` if it declares ``capability``, else None."""
    if isinstance(recorder, LogRecorder) and capability in recorder.capabilities:
        return recorder
    return None
