"""Recorders whose rows carry costart's checksum (`costart.pgstore.checksums`): written
with every insert, checked on every read the library offers (``select_events`` here,
``select_notifications`` in the application recorder)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar
from uuid import UUID

from eventsourcing.persistence import InterfaceError, OperationalError, StoredEvent
from eventsourcing.postgres import PostgresAggregateRecorder, PostgresDatastore
from eventsourcing.utils import retry
from psycopg import Cursor
from psycopg.rows import DictRow
from psycopg.sql import SQL, Composed

from costart.pgstore import checksums
from costart.pgstore.checksums import Form, Prefixes


class ChecksummedRecorder(PostgresAggregateRecorder):
    """The library's aggregate recorder with a checksum per row; a row read that fails it
    raises `CorruptRecordError` naming its position (here its ``originator_version``, so
    the snapshot fallback can skip it)."""

    position_column = "originator_version"
    places_rows: ClassVar[bool] = False
    """Whether this recorder's rows carry the placed form (their position is not part of
    their content): then a content checksum after the first placed row is damage."""

    def __init__(
        self, datastore: PostgresDatastore, *, events_table_name: str = "stored_events"
    ) -> None:
        super().__init__(datastore, events_table_name=events_table_name)
        self.log_name = events_table_name
        """The log named in errors: the table, as LMDB names its log by its database."""
        ds_schema = self.datastore.schema
        self.sql_create_statements.append(
            checksums.add_checksum_column(ds_schema, events_table_name)
        )
        self.insert_events_statement = checksums.insert_checksummed(
            ds_schema, events_table_name, self.stored_event_type_name
        )
        self._first_statements: dict[Form, Composed] = {
            form: checksums.first_of_form(
                ds_schema, events_table_name, self.position_column, form, self.first_checked_scope
            )
            for form in (Form.CONTENT, Form.PLACED)
        }
        self._firsts: dict[tuple[Form, Any], int] = {}

    first_checked_scope = " AND originator_id = %s"
    """Older forms are a prefix of each originator's versions."""

    def _insert_stored_events(
        self, curs: Cursor[DictRow], stored_events: Sequence[StoredEvent], **_: Any
    ) -> None:
        rows = [
            self.construct_pg_stored_event(e.originator_id, e.originator_version, e.topic, e.state)
            for e in stored_events
        ]
        curs.execute(self.insert_events_statement, (checksums.checksums_of(stored_events), rows))

    def first_of_form(self, row: DictRow, form: Form) -> int | None:
        """The first position of the row's scope whose checksum has ``form`` (CONTENT:
        any checksum) or a newer one; cached once there is one (rows are only appended,
        and new rows always carry the newest form)."""
        key = row["originator_id"] if self.first_checked_scope else None
        known = self._firsts.get((form, key))
        if known is not None:
            return known
        params = (key,) if self.first_checked_scope else ()
        with self.datastore.get_connection() as conn, conn.cursor() as curs:
            found = curs.execute(self._first_statements[form], params).fetchone()
        first = None if found is None else found["first"]
        if first is not None:
            self._firsts[form, key] = int(first)
        return first

    def prefixes(self, row: DictRow) -> Prefixes:
        """Where the older forms must have ended, asked only for a row of an older form."""
        form = checksums.form_of(row[checksums.COLUMN])
        if form is Form.LEGACY:
            return Prefixes(first_checked=self.first_of_form(row, Form.CONTENT))
        if form is Form.CONTENT and self.places_rows:
            return Prefixes(first_placed=self.first_of_form(row, Form.PLACED))
        return Prefixes()

    def check_rows(self, rows: Sequence[DictRow]) -> None:
        for row in rows:
            if checksums.COLUMN not in row:
                continue  # a table of an earlier release, opened read-only: all legacy
            position = int(row[self.position_column])
            checksums.check_row(row, self.log_name, position, self.prefixes(row))

    @retry((InterfaceError, OperationalError), max_attempts=10, wait=0.2)
    def select_events(
        self,
        originator_id: UUID | str,
        *,
        gt: int | None = None,
        lte: int | None = None,
        desc: bool = False,
        limit: int | None = None,
    ) -> Sequence[StoredEvent]:
        statement = self.select_events_statement
        params: list[Any] = [originator_id]
        if gt is not None:
            params.append(gt)
            statement += SQL(" AND originator_version > %s")
        if lte is not None:
            params.append(lte)
            statement += SQL(" AND originator_version <= %s")
        statement += SQL(
            " ORDER BY originator_version DESC" if desc else " ORDER BY originator_version ASC"
        )
        if limit is not None:
            params.append(limit)
            statement += SQL(" LIMIT %s")
        with self.datastore.get_connection() as conn, conn.cursor() as curs:
            curs.execute(statement, params, prepare=True)
            rows = curs.fetchall()
        self.check_rows(rows)
        return [
            StoredEvent(
                originator_id=row["originator_id"],
                originator_version=row["originator_version"],
                topic=row["topic"],
                state=bytes(row["state"]),
            )
            for row in rows
        ]
