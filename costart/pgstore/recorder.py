"""The Controller's log on PostgreSQL: the library's application recorder, appending
through one server-side function (`schema.create_append_function`) that gives gapless
positions and, when the recorder holds a lease epoch or the host's term (ADR 0027),
fences the append in its own transaction. Every row carries costart's checksum, bound to
its position, checked on every read (ADR 0040, ADR 0048). Subscriptions and tables are
the library's.

Without an epoch (tests, tools, a single controller) appends are not fenced, as on the
LMDB store.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from eventsourcing.persistence import (
    InterfaceError,
    Notification,
    OperationalError,
    PersistenceError,
    ProgrammingError,
    StoredEvent,
)
from eventsourcing.postgres import PostgresApplicationRecorder, PostgresDatastore
from eventsourcing.utils import retry
from psycopg.sql import SQL, Composable, Identifier

from costart.eventlog.capabilities import Capability, LogRecorder
from costart.eventlog.errors import CorruptRecordError, Defect
from costart.eventlog.host_term import check_term
from costart.pgstore import checksums, schema
from costart.pgstore.checked import ChecksummedRecorder
from costart.pgstore.create import create_retrying
from costart.pgstore.errors import fenced_error


class CostartApplicationRecorder(ChecksummedRecorder, PostgresApplicationRecorder, LogRecorder):
    """``epoch``: the lease epoch every append must match (None: appends not fenced).
    `claim_term`: the host's term every later append carries instead. Records are named
    by their placed row checksum (`record_hash`), which commits to that record at its
    position, not to the records before it (no chain, ADR 0048)."""

    capabilities = Capability.RECORD_HASHES | Capability.HOST_TERM

    position_column = "notification_id"
    places_rows = True
    first_checked_scope = ""
    """Older forms are a prefix of the whole log."""

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
        self.term: int | None = None
        function = f"{events_table_name}_append"
        claim = f"{events_table_name}_claim_term"
        self.check_identifier_length(function)
        self.check_identifier_length(claim)
        ds_schema = self.datastore.schema
        self.sql_create_statements.append(schema.create_lease_table(ds_schema))
        self.sql_create_statements.append(schema.create_term_table(ds_schema))
        self.sql_create_statements.append(schema.create_claim_function(ds_schema, claim))
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
        self._claim = schema.call_claim(ds_schema, claim)
        self._select_term = schema.select_term(ds_schema)
        self._select_checksum = SQL(
            "SELECT {column} FROM {schema}.{table} WHERE notification_id = %s"
        ).format(
            column=Identifier(checksums.COLUMN),
            schema=Identifier(ds_schema),
            table=Identifier(events_table_name),
        )

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
                curs.execute(
                    self._append,
                    (self.lease_name, self.epoch, self.term, rows, checksums.checksums_of(rows)),
                    prepare=True,
                )
                return [int(row["id"]) for row in curs.fetchall()]
        except PersistenceError as error:
            fenced = fenced_error(error, self.epoch or 0, self.term or 0)
            if fenced is not None:
                raise fenced from None
            raise

    def claim_term(self, term: int) -> None:
        check_term(term)
        try:
            with self.datastore.get_connection() as conn, conn.cursor() as curs:
                curs.execute(self._claim, (self.lease_name, term))
        except PersistenceError as error:
            fenced = fenced_error(error, self.epoch or 0, term)
            if fenced is not None:
                raise fenced from None
            raise
        self.term = term

    def stored_term(self) -> int:
        with self.datastore.get_connection() as conn, conn.cursor() as curs:
            curs.execute(self._select_term, (self.lease_name,))
            row = curs.fetchone()
        return 0 if row is None else int(row["term"])

    def record_hash(self, position: int) -> bytes | None:
        """The stored checksum of the row at ``position`` (the placed form names the
        record and its position, ADR 0048; None for a legacy row, or a table of an
        earlier release opened read-only); `CorruptRecordError` (GAP) for no such row."""
        try:
            with self.datastore.get_connection() as conn, conn.cursor() as curs:
                row = curs.execute(self._select_checksum, (position,)).fetchone()
        except ProgrammingError:  # no checksum column: an unmigrated table, all legacy
            return None
        if row is None:
            raise CorruptRecordError(self.log_name, position, Defect.GAP, "no such row")
        stored = row[checksums.COLUMN]
        return None if stored is None else bytes(stored)

    @retry((InterfaceError, OperationalError), max_attempts=10, wait=0.2)
    def select_notifications(
        self,
        start: int | None,
        limit: int,
        stop: int | None = None,
        topics: Sequence[str] = (),
        *,
        inclusive_of_start: bool = True,
    ) -> Sequence[Notification]:
        """The library's read of the log, each row checked against its checksum."""
        conditions: list[Composable] = []
        params: list[Any] = []
        if start is not None:
            conditions.append(
                SQL("notification_id >= %s" if inclusive_of_start else "notification_id > %s")
            )
            params.append(start)
        if stop is not None:
            conditions.append(SQL("notification_id <= %s"))
            params.append(stop)
        if topics:
            conditions.append(SQL("topic = ANY(%s)"))
            params.append(list(topics))
        statement = SQL("SELECT * FROM {schema}.{table}").format(
            schema=Identifier(self.datastore.schema), table=Identifier(self.events_table_name)
        )
        if conditions:
            statement += SQL(" WHERE ") + SQL(" AND ").join(conditions)
        statement += SQL(" ORDER BY notification_id LIMIT %s")
        params.append(limit)
        with self.datastore.get_connection() as conn, conn.cursor() as curs:
            curs.execute(statement, params, prepare=True)
            rows = curs.fetchall()
        self.check_rows(rows)
        return [
            Notification(
                id=row["notification_id"],
                originator_id=row["originator_id"],
                originator_version=row["originator_version"],
                topic=row["topic"],
                state=bytes(row["state"]),
            )
            for row in rows
        ]
