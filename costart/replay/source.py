"""Where replay reads events from: anything that yields ``(position, event)`` in order."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol

from eventsourcing.persistence import ApplicationRecorder

from costart.domain.events import DomainEvent
from costart.store.codec import MsgspecMapper
from costart.store.reading import read_events


class EventSource(Protocol):
    def events(self, after: int = 0, until: int | None = None) -> Iterator[tuple[int, DomainEvent]]:
        """Events at positions ``after < p <= until`` in log order."""
        ...


class RecorderSource:
    """Events from any of the eventsourcing library's application recorders."""

    def __init__(self, recorder: ApplicationRecorder, mapper: MsgspecMapper | None = None) -> None:
        self.recorder = recorder
        self.mapper = mapper or MsgspecMapper()

    def events(self, after: int = 0, until: int | None = None) -> Iterator[tuple[int, DomainEvent]]:
        return read_events(self.recorder, self.mapper, after, until)
