"""The Controller's log on PostgreSQL: the library's application recorder with gapless
positions and, when it holds a lease epoch, fenced appends.

Fencing happens in the append's own transaction: the library runs ``_insert_events``
first inside it (before its table lock and insert), and ours calls the epoch check
(`schema.create_check_epoch_function`), which fails the whole transaction when the
stored epoch is not ours. Without an epoch (tests, tools, a single controller) appends
are not fenced, as on the LMDB store.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from eventsourcing.persistence import PersistenceError, StoredEvent
from eventsourcing.postgres import PostgresApplicationRecorder, PostgresDatastore
from psycopg import Cursor
from psycopg.rows import DictRow

from costart.pgstore import schema
from costart.pgstore.create import create_retrying
from costart.pgstore.errors import fenced_error


class CostartApplicationRecorder(PostgresApplicationRecorder):
    """``epoch``: the lease epoch every append must match (None: appends not fenced)."""

    def __init__(
        self,
        datastore: PostgresDatastore,
        *,
        events_table_name: str = "stored_events",
        epoch: int | None = None,
    ) -> None:
        super().__init__(datastore, events_table_name=events_table_name)
        if epoch is not None and epoch <= 0:
            raise ValueError(f"a lease epoch is positive, not {epoch}")
        self.epoch = epoch
        ds_schema = self.datastore.schema
        self.insert_events_statement = schema.gapless_insert(
            ds_schema, self.events_table_name, self.stored_event_type_name
        )
        self.sql_create_statements.append(schema.create_lease_table(ds_schema))
        self.sql_create_statements.append(schema.create_check_epoch_function(ds_schema))
        self._check_epoch = schema.check_epoch(ds_schema)

    @property
    def lease_name(self) -> str:
        """The lease row that fences this log."""
        return self.events_table_name

    def insert_events(
        self, stored_events: Sequence[StoredEvent], **kwargs: Any
    ) -> Sequence[int] | None:
        try:
            ids: Sequence[int] | None = super().insert_events(stored_events, **kwargs)
            return ids
        except PersistenceError as error:
            fenced = fenced_error(error, self.epoch or 0)
            if fenced is not None:
                raise fenced from None
            raise

    def create_table(self) -> None:
        create_retrying(super().create_table)

    def _insert_events(
        self, curs: Cursor[DictRow], stored_events: Sequence[StoredEvent], **kwargs: Any
    ) -> None:
        if self.epoch is not None and stored_events:
            curs.execute(self._check_epoch, (self.lease_name, self.epoch), prepare=True)
        super()._insert_events(curs, stored_events, **kwargs)
