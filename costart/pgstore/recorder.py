"""The Controller's log on PostgreSQL: the library's application recorder, appending
through one server-side function (`schema.create_append_function`) that gives gapless
positions and, when the recorder holds a lease epoch, fences the append in its own
transaction. Reads, subscriptions and tables are the library's.

Without an epoch (tests, tools, a single controller) appends are not fenced, as on the
LMDB store.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from eventsourcing.persistence import PersistenceError, StoredEvent
from eventsourcing.postgres import PostgresApplicationRecorder, PostgresDatastore

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
        function = f"{events_table_name}_append"
        self.check_identifier_length(function)
        ds_schema = self.datastore.schema
        self.sql_create_statements.append(schema.create_lease_table(ds_schema))
        self.sql_create_statements.append(
            schema.create_append_function(
                ds_schema,
                events_table_name,
                self.stored_event_type_name,
                function,
                self.channel_name,
            )
        )
        self._append = schema.call_append(ds_schema, function)

    @property
    def lease_name(self) -> str:
        """The lease row that fences this log."""
        return self.events_table_name

    def create_table(self) -> None:
        create_retrying(super().create_table)

    def insert_events(
        self, stored_events: Sequence[StoredEvent], **kwargs: Any
    ) -> Sequence[int] | None:
        if not stored_events:
            return None
        rows = [
            self.construct_pg_stored_event(e.originator_id, e.originator_version, e.topic, e.state)
            for e in stored_events
        ]
        try:
            # Autocommit: the one statement is the whole transaction.
            with self.datastore.get_connection() as conn, conn.cursor() as curs:
                curs.execute(self._append, (self.lease_name, self.epoch, rows), prepare=True)
                return [int(row["id"]) for row in curs.fetchall()]
        except PersistenceError as error:
            fenced = fenced_error(error, self.epoch or 0)
            if fenced is not None:
                raise fenced from None
            raise
