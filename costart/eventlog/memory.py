"""The Controller's in-memory log: the library's POPO application recorder, cheaper to append.

A persistence module of its own (``PERSISTENCE_MODULE=costart.eventlog.memory``, the
Controller's default): the library's in-memory persistence with this recorder for the
application's log, used by the simulator, tests and demos. Storage, subscriptions and the aggregate reads are the
library's own (ADR 0018); three paths are cheaper, with the same results:

- the append is one pass that keys each event by its id's cached text (`id_text`:
  ``str(UUID)`` twice per event was most of the library's append) and checks uniqueness
  as it inserts, undoing the batch's rows if an event is already recorded. Same
  contract: an event whose (originator, version) is already recorded, or repeated in
  the batch, fails the whole batch with ``IntegrityError`` and records nothing;
- replay reads through a record cursor, as on the LMDB store, without building
  notification objects;
- a notification selection without a topic filter is one slice of the table.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, NamedTuple
from uuid import UUID

from eventsourcing import popo
from eventsourcing.persistence import (
    ApplicationRecorder,
    IntegrityError,
    Notification,
    StoredEvent,
)

from costart.domain.ids import ID_TEXTS, id_text
from costart.eventlog.capabilities import Capability, LogRecorder


class MemoryRecord(NamedTuple):
    """A log record as replay reads it (the shape of the LMDB store's records)."""

    id: int
    topic: str
    state: bytes


class MemoryApplicationRecorder(popo.POPOApplicationRecorder, LogRecorder):
    """`POPOApplicationRecorder` with a one-pass append (see the module docstring)."""

    capabilities = Capability.RECORD_CURSOR

    def _insert_events(
        self, stored_events: Sequence[StoredEvent], **kwargs: Any
    ) -> Sequence[int] | None:
        with self._database_lock:
            index, table = self._stored_events_index, self._stored_events
            first = len(table)
            for s in stored_events:
                # The library's key, ``str(originator_id)``, from the cache for ids.
                oid = s.originator_id
                if isinstance(oid, UUID):
                    versions = index[ID_TEXTS.get(oid.int) or id_text(oid)]
                else:
                    versions = index[str(oid)]
                if s.originator_version in versions:
                    self._undo(first)
                    raise IntegrityError(f"Stored event already recorded: {s}")
                versions[s.originator_version] = len(table)
                table.append(s)
            return list(range(first + 1, len(table) + 1))

    def _undo(self, first: int) -> None:
        """Forget the events recorded from table row ``first`` on (a failed batch)."""
        for s in self._stored_events[first:]:
            del self._stored_events_index[str(s.originator_id)][s.originator_version]
        del self._stored_events[first:]

    def iter_records(self, start: int = 1) -> Iterator[MemoryRecord]:
        """The records from log position ``start`` on, without building notification
        objects: what replay reads (a restarting controller's tail)."""
        with self._database_lock:
            rows = self._stored_events[max(start, 1) - 1 :]
        for position, s in enumerate(rows, max(start, 1)):
            yield MemoryRecord(position, s.topic, s.state)

    def select_notifications(
        self,
        start: int | None,
        limit: int,
        stop: int | None = None,
        topics: Sequence[str] = (),
        *,
        inclusive_of_start: bool = True,
    ) -> Sequence[Notification]:
        """The library's selection; without a topic filter, one slice of the table
        instead of a test per row (how the simulator digests a whole log)."""
        if topics or limit < 1:
            return super().select_notifications(
                start, limit, stop, topics, inclusive_of_start=inclusive_of_start
            )
        if start is None:
            start = 1
        elif not inclusive_of_start:
            start += 1
        start = max(start, 1)
        with self._database_lock:
            end = start - 1 + limit if stop is None else min(stop, start - 1 + limit)
            rows = self._stored_events[start - 1 : max(end, start - 1)]
        return [
            Notification(s.originator_id, s.originator_version, s.topic, s.state, position)
            for position, s in enumerate(rows, start)
        ]


class Factory(popo.POPOFactory):
    """The library's in-memory persistence, with `MemoryApplicationRecorder` for the
    application's log. The only factory class of this module: the library's loader looks
    for exactly one (hence ``popo.POPOFactory``, not an imported name)."""

    def application_recorder(self) -> ApplicationRecorder:
        return MemoryApplicationRecorder()
