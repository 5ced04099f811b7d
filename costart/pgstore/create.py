"""Creating tables when several processes start on a new database at once.

The library's ``CREATE TYPE`` and ``CREATE TABLE IF NOT EXISTS`` are not safe against a
concurrent twin: the loser of the race fails on the catalog's unique index (an
``IntegrityError``) instead of finding the object there. Everything we create is
idempotent, so the loser simply tries again once the winner committed.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Final

from eventsourcing.persistence import IntegrityError
from eventsourcing.postgres import (
    PostgresProcessRecorder,
    PostgresTrackingRecorder,
)

from costart.pgstore.checked import ChecksummedRecorder

ATTEMPTS: Final = 5
BACKOFF_S: Final = 0.05


def create_retrying(create: Callable[[], None]) -> None:
    """Run an idempotent ``create``, again after losing a race with another process."""
    for attempt in range(1, ATTEMPTS + 1):
        try:
            create()
            return
        except IntegrityError:
            if attempt == ATTEMPTS:
                raise
            time.sleep(BACKOFF_S * attempt)


class AggregateRecorder(ChecksummedRecorder):
    """The library's recorder (snapshots) with costart's row checksums, created
    race-safely."""

    def create_table(self) -> None:
        create_retrying(super().create_table)


class TrackingRecorder(PostgresTrackingRecorder):
    def create_table(self) -> None:
        create_retrying(super().create_table)


class ProcessRecorder(PostgresProcessRecorder):
    def create_table(self) -> None:
        create_retrying(super().create_table)
