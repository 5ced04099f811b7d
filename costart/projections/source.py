"""Reading a controller's log without building a `Controller`.

Building a `Controller` folds the whole log into its live state; a view reader needs
only the events after its tracked position. `RecorderSource` opens the same persistence
module the controller is configured with (``PERSISTENCE_MODULE`` and its settings, from
the given environment) and decodes notifications with the controller's mapper.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Final, cast
from uuid import UUID

from eventsourcing.persistence import ApplicationRecorder, InfrastructureFactory, Mapper
from eventsourcing.utils import Environment

from costart.domain.events import DomainEvent
from costart.store.codec import MsgspecMapper

APPLICATION_NAME: Final = "costart"  # the Controller's name: its env keys may be prefixed
PAGE: Final = 1000


class RecorderSource:
    """An `EventSource` over an application recorder (read-only use)."""

    def __init__(self, recorder: ApplicationRecorder, mapper: Mapper[UUID]) -> None:
        self.recorder = recorder
        self.mapper = mapper

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> RecorderSource:
        """Open the log the way a `Controller` with this environment would."""
        factory = InfrastructureFactory.construct(Environment(APPLICATION_NAME, dict(env)))
        mapper = MsgspecMapper(compressor=factory.compressor(), cipher=factory.cipher())
        return cls(factory.application_recorder(), mapper)

    def read_events(self, after: int = 0) -> Iterator[tuple[int, DomainEvent]]:
        start = after + 1
        while True:
            page = self.recorder.select_notifications(start=start, limit=PAGE)
            for notification in page:
                event = self.mapper.to_domain_event(notification)
                yield notification.id, cast(DomainEvent, event)
            if len(page) < PAGE:
                return
            start = page[-1].id + 1

    def max_position(self) -> int:
        return self.recorder.max_notification_id() or 0
