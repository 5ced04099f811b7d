"""The Controller's in-memory log: the library's POPO application recorder, cheaper to append.

Used whenever the Controller runs on the library's default in-memory persistence (the
simulator, tests, demos). Reading, subscriptions and storage are the library's own; only
the append is replaced (ADR 0018): one pass that keys each event by its id's cached text
(`id_text`: ``str(UUID)`` twice per event was most of the library's append) and checks
uniqueness without building a set for the common one-event write. Same contract: an
event whose (originator, version) is already recorded, or repeated in the batch, fails
the whole batch with ``IntegrityError`` and records nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from uuid import UUID

from eventsourcing.persistence import IntegrityError, StoredEvent
from eventsourcing.popo import POPOApplicationRecorder

from costart.domain.ids import ID_TEXTS, id_text


def _text(originator_id: UUID | str) -> str:
    """The index key the library uses, ``str(originator_id)``, from the cache for ids."""
    if isinstance(originator_id, UUID):
        return ID_TEXTS.get(originator_id.int) or id_text(originator_id)
    return str(originator_id)


class MemoryApplicationRecorder(POPOApplicationRecorder):
    """`POPOApplicationRecorder` with a one-pass append (see the module docstring)."""

    def _insert_events(
        self, stored_events: Sequence[StoredEvent], **kwargs: Any
    ) -> Sequence[int] | None:
        with self._database_lock:
            index, table = self._stored_events_index, self._stored_events
            if len(stored_events) == 1:  # most commands write one event
                s = stored_events[0]
                versions = index[_text(s.originator_id)]
                if s.originator_version in versions:
                    raise IntegrityError(f"Stored event already recorded: {s}")
                table.append(s)
                versions[s.originator_version] = len(table) - 1
                return [len(table)]
            keyed = [(_text(s.originator_id), s) for s in stored_events]
            for key, s in keyed:
                if s.originator_version in index[key]:
                    raise IntegrityError(f"Stored event already recorded: {s}")
            if len({(k, s.originator_version) for k, s in keyed}) < len(keyed):
                raise IntegrityError(f"Stored events are not unique: {stored_events}")
            first = len(table) + 1
            for key, s in keyed:
                table.append(s)
                index[key][s.originator_version] = len(table) - 1
            return list(range(first, len(table) + 1))
