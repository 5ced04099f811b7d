"""A controller's log opened read-only for forensics (`costart replay`): the contract
each backend's replay log keeps (`StoreBackend.open_replay_log`).

Opened read-only, it never disturbs a writer: the replay tools read a copy of a
production log, or the live one beside a running server.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Final, Self

from costart.eventlog.event_reading import RecorderSource
from costart.eventlog.snapshots import SnapshotStore

EVENTS_LOG: Final = "costart_events"
"""The name of the controller's event log in a store (its LMDB database, its table)."""
SNAPSHOTS_LOG: Final = "costart_snapshots"


class LogIntegrityError(Exception):
    """The store's own check failed: ``position`` names the first bad record."""

    def __init__(self, log: str, position: int, detail: str) -> None:
        self.log = log
        self.position = position
        super().__init__(f"{log} position {position}: {detail}")


class ReplayLog:
    """A log opened read-only for replay, on any backend: its event ``source``, its
    ``snapshots`` (None: it keeps none), where its views are (``views_dir``, set by
    whoever knows), and the store's own `integrity_check`. ``with`` closes it.

    Opening one that holds no controller log raises `FileNotFoundError` naming the
    location: an empty log is not read as a log without events."""

    source: RecorderSource
    snapshots: SnapshotStore | None
    views_dir: Path | None = None
    log_hash_at: Callable[[int], bytes] | None = None
    """The chain hash of the record at a position, for a hash-chained log (LMDB): a
    snapshot must name this chain. None for a log without a chain (PostgreSQL)."""

    def integrity_check(self) -> None:
        """Raise `LogIntegrityError` at the first record that fails the store's checks."""
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
