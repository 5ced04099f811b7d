"""Row checksums on PostgreSQL: every stored event (and snapshot) row carries the record
checksum costart computed on insert, checked on every read (ADR 0040).

PostgreSQL's page checksums guard against the disk; they do not see a row altered through
SQL, which still decodes and would be folded as if it had been written. The ``checksum``
column holds `costart.store.records.content_checksum` of the row's originator, version,
topic and state; the server assigns positions inside the append, so the position is not
hashed (the gapless numbering guards it, `costart.pgstore.gaps`).

A row written before the column existed has a NULL checksum: an unchecked legacy row.
Rows are written in position order, so legacy rows are a prefix: a NULL checksum after the
first checksummed row is damage (a checksum removed), not a legacy row.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from psycopg.sql import SQL, Composed, Identifier

from costart.store import CorruptRecordError, Defect, content_checksum

COLUMN: Final = "checksum"


def add_checksum_column(schema: str, table: str) -> Composed:
    """Migrate a table of an earlier release in place: existing rows get NULL (legacy)."""
    return SQL("ALTER TABLE {schema}.{table} ADD COLUMN IF NOT EXISTS {column} bytea").format(
        schema=Identifier(schema), table=Identifier(table), column=Identifier(COLUMN)
    )


def checksums_of(rows: Sequence[Any]) -> list[bytes]:
    """The checksum of each stored event (anything with the four stored fields)."""
    return [content_checksum(r.originator_id, r.originator_version, r.topic, r.state) for r in rows]


def check_row(row: Mapping[str, Any], log: str, position: int, first_checked: int | None) -> None:
    """Raise `CorruptRecordError` at ``position`` unless ``row`` matches its checksum.

    ``first_checked``: the position of the log's first checksummed row (None: none yet);
    a NULL checksum past it is a removed checksum, before it a legacy row.
    """
    stored = row[COLUMN]
    if stored is None:
        if first_checked is not None and position > first_checked:
            raise CorruptRecordError(
                log,
                position,
                Defect.CHECKSUM,
                f"checksum missing after the first checksummed row ({first_checked})",
                row["originator_version"],
            )
        return
    expected = content_checksum(
        row["originator_id"], row["originator_version"], row["topic"], bytes(row["state"])
    )
    if bytes(stored) != expected:
        raise CorruptRecordError(
            log, position, Defect.CHECKSUM, "the row was altered", row["originator_version"]
        )


def insert_checksummed(schema: str, table: str, stored_event_type: str) -> Composed:
    """The library's insert of a batch of rows, with each row's checksum beside it
    (parameters: the checksums, then the rows in the same order)."""
    return SQL(
        "INSERT INTO {schema}.{table} (originator_id, originator_version, topic, state, {column}) "
        "SELECT e.originator_id, e.originator_version, e.topic, e.state, (%s::bytea[])[e.n] "
        "FROM unnest(%s::{schema}.{type}[]) WITH ORDINALITY "
        "AS e(originator_id, originator_version, topic, state, n)"
    ).format(
        schema=Identifier(schema),
        table=Identifier(table),
        type=Identifier(stored_event_type),
        column=Identifier(COLUMN),
    )


def first_checked(schema: str, table: str, position: str, where: str = "") -> Composed:
    """The first position (column ``position``) of a checksummed row, under ``where``."""
    return SQL(
        "SELECT min({position}) AS first FROM {schema}.{table} WHERE {column} IS NOT NULL{where}"
    ).format(
        position=Identifier(position),
        schema=Identifier(schema),
        table=Identifier(table),
        column=Identifier(COLUMN),
        where=SQL(where),
    )
