"""Where replay reads events from: anything that yields ``(position, event)`` in order —
a `Controller`, or a `RecorderSource` over a log opened without one."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol

from costart.domain.events import DomainEvent
from costart.eventlog.event_reading import RecorderSource

__all__ = ["RecorderSource", "ReplaySource"]


class ReplaySource(Protocol):
    """What replay reads: the log's events up to a bound (a log opened read-only, or the
    Controller). The views' source is `costart.projections.EventSource`, which also
    hands over the log's recorder."""

    def read_events(
        self, after: int = 0, until: int | None = None
    ) -> Iterator[tuple[int, DomainEvent]]:
        """Events at positions ``after < p <= until`` in log order."""
        ...
