"""Reading the notification log as ``(position, event)`` pairs, page by page.

One reader serves the Controller's catch-up, the projections and the replay tools, over
any of the library's application recorders.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, cast

import msgspec
from eventsourcing.persistence import (
    ApplicationRecorder,
    InfrastructureFactory,
    MapperDeserialisationError,
)
from eventsourcing.utils import Environment, TopicError

from costart.domain.actors import CHECKED_LOG_BYTES
from costart.domain.events import DomainEvent
from costart.eventlog.capabilities import Capability, Record, declaring
from costart.eventlog.closing import closed_if_failed
from costart.eventlog.codec import MsgspecMapper, event_decoder
from costart.eventlog.errors import CorruptRecordError, Defect

PAGE_SIZE = 1000


def log_records(recorder: ApplicationRecorder, start: int = 1) -> Iterator[Record]:
    """Every record from position ``start`` on: through the store's own cursor where it
    has one (LMDB, the in-memory log), which builds no notification objects, else page
    by page through the library's notifications."""
    cursor = declaring(recorder, Capability.RECORD_CURSOR)
    if cursor is not None:
        yield from cursor.iter_records(start)
        return
    while True:
        page = recorder.select_notifications(start=start, limit=PAGE_SIZE)
        yield from page
        if len(page) < PAGE_SIZE:
            return
        start = page[-1].id + 1


def read_events(
    recorder: ApplicationRecorder,
    mapper: MsgspecMapper,
    after: int = 0,
    until: int | None = None,
) -> Iterator[tuple[int, DomainEvent]]:
    """Events at positions ``after < p <= until`` (to the end when ``until`` is None)."""
    start = after + 1
    cursor = declaring(recorder, Capability.RECORD_CURSOR)
    if until is None and cursor is not None:
        records = cursor.iter_records
        # The store's own full-log cursor: checked, and far cheaper than paging.
        # Without a cipher or compressor the stored body is the event itself.
        if mapper.cipher or mapper.compressor:
            for record in records(start):
                yield record.id, mapper.decode_state(record.topic, record.state)
            return
        # The decoder looked up once per topic, not once per event: replay's hot loop.
        decoders: dict[str, msgspec.msgpack.Decoder[Any]] = {}
        # A store that checks every record's checksum as it reads it hands over bytes
        # written by a command whose actor was checked then: decoding them does not
        # check it again (the flag is on for the decode call alone).
        trusted = declaring(recorder, Capability.VERIFIED_READS) is not None
        checked = CHECKED_LOG_BYTES
        for record in records(start):
            decoder = decoders.get(record.topic)
            if decoder is None:
                decoder = decoders[record.topic] = event_decoder(record.topic)
            checked.on = trusted
            try:
                event = decoder.decode(record.state)
            finally:
                checked.on = False
            yield record.id, event
        return
    while until is None or start <= until:
        limit = PAGE_SIZE if until is None else min(PAGE_SIZE, until - start + 1)
        page = recorder.select_notifications(start=start, limit=limit)
        for expect, notification in enumerate(page, start):
            if notification.id != expect:
                # A store without its own gap check (PostgreSQL): rows were deleted.
                raise CorruptRecordError("events", expect, Defect.GAP, f"next is {notification.id}")
            try:
                event = cast(DomainEvent, mapper.to_domain_event(notification))
            except (MapperDeserialisationError, TopicError) as error:
                # An altered row (no record checksum of ours there): named, not a traceback.
                raise CorruptRecordError("events", expect, Defect.FORMAT, str(error)) from None
            yield notification.id, event
        if len(page) < limit:
            return
        start = page[-1].id + 1


class RecorderSource:
    """The events of a log as ``(position, event)``, over any application recorder,
    without building a `Controller` (which would fold the whole log)."""

    def __init__(self, recorder: ApplicationRecorder, mapper: MsgspecMapper | None = None) -> None:
        self.recorder = recorder
        self.mapper = mapper or MsgspecMapper()

    @classmethod
    def from_env(cls, env: Mapping[str, str], app_name: str = "costart") -> RecorderSource:
        """Open the log the way a `Controller` with this environment would."""
        factory = InfrastructureFactory.construct(Environment(app_name, dict(env)))
        with closed_if_failed(factory):
            mapper = MsgspecMapper(compressor=factory.compressor(), cipher=factory.cipher())
            return cls(factory.application_recorder(), mapper)

    def read_events(
        self, after: int = 0, until: int | None = None
    ) -> Iterator[tuple[int, DomainEvent]]:
        return read_events(self.recorder, self.mapper, after, until)

    def checked_records(self, after: int = 0) -> tuple[Iterator[Record], bool] | None:
        """Every record after position ``after``, as the store's own cursor reads them
        (gap-free, checked as the store checks a read), and whether the store verified
        each one's checksum (`Capability.VERIFIED_READS`); None where the records are not
        to be read so: a store without the cursor, or bodies that are not the events
        themselves (a cipher or a compressor). `read_events` reads any store."""
        cursor = declaring(self.recorder, Capability.RECORD_CURSOR)
        if cursor is None or self.mapper.cipher or self.mapper.compressor:
            return None
        trusted = declaring(self.recorder, Capability.VERIFIED_READS) is not None
        return cursor.iter_records(after + 1), trusted
