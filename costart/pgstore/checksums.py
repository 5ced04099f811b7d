"""Row checksums on PostgreSQL: every stored event (and snapshot) row carries a record
checksum, checked on every read (ADR 0040, ADR 0048).

PostgreSQL's page checksums guard against the disk; they do not see a row altered through
SQL, which still decodes and would be folded as if it had been written. The ``checksum``
column holds one of two forms, told apart by their length:

* **content** (16 bytes, ADR 0040): `costart.eventlog.record_checksum.content_checksum` of the row's
  originator, version, topic and state. It does not cover where the row stands in the
  log, so two whole rows swapped between positions pass it. Snapshot rows keep it: their
  place *is* their originator and version (the table's key), which it covers.
* **placed** (17 bytes: the form byte ``0x02``, then 16; ADR 0048): the content checksum
  bound to the row's log position, ``sha256(content || position as 8 big-endian
  bytes)[:16]``. The server assigns positions inside the one-statement append (ADR 0010),
  so the append function computes it from the content checksum the writer sends; a
  reader recomputes both. Every event row written since carries it, so a row moved to
  another position, or two rows' contents swapped, is named at its position.

A row written before the column existed has a NULL checksum: an unchecked legacy row.
Rows are written in position order, so each older form is a prefix: a NULL checksum after
the first checksummed row is a removed checksum, and a content checksum after the first
placed one (in the events table) a row moved there or written by an earlier release's
append function -- damage either way, not a legacy row.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any, Final

from psycopg.sql import SQL, Composed, Identifier

from costart.eventlog.errors import CorruptRecordError, Defect
from costart.eventlog.record_checksum import content_checksum

COLUMN: Final = "checksum"
CHECKSUM_SIZE: Final = len(content_checksum("", 0, "", b""))
"""16: BLAKE2b-128, as every record checksum of the LMDB log."""
PLACED_FORM: Final = b"\x02"
PLACED_SIZE: Final = len(PLACED_FORM) + CHECKSUM_SIZE


class Form(Enum):
    """The forms a stored checksum takes, oldest first."""

    LEGACY = "none (legacy row)"
    CONTENT = "content"
    PLACED = "placed"


def form_of(stored: bytes | None) -> Form | None:
    """The form of a stored checksum; None for a value of no known form."""
    if stored is None:
        return Form.LEGACY
    if len(stored) == CHECKSUM_SIZE:
        return Form.CONTENT
    if len(stored) == PLACED_SIZE and stored[:1] == PLACED_FORM:
        return Form.PLACED
    return None


def placed_checksum(content: bytes, position: int) -> bytes:
    """The placed form of a row whose content checksum is ``content`` at ``position``
    (what the append function stores: `placed_sql`)."""
    return (
        PLACED_FORM + hashlib.sha256(content + position.to_bytes(8, "big")).digest()[:CHECKSUM_SIZE]
    )


def placed_sql(content: str, position: str) -> SQL:
    """The SQL expression of `placed_checksum` (``sha256``: PostgreSQL 11 or later)."""
    return SQL(
        f"'\\x02'::bytea || substring(sha256({content} || int8send({position})) "
        f"FROM 1 FOR {CHECKSUM_SIZE})"
    )


def add_checksum_column(schema: str, table: str) -> Composed:
    """Migrate a table of an earlier release in place: existing rows get NULL (legacy)."""
    return SQL("ALTER TABLE {schema}.{table} ADD COLUMN IF NOT EXISTS {column} bytea").format(
        schema=Identifier(schema), table=Identifier(table), column=Identifier(COLUMN)
    )


def checksums_of(rows: Sequence[Any]) -> list[bytes]:
    """The content checksum of each stored event (anything with the four stored fields)."""
    return [content_checksum(r.originator_id, r.originator_version, r.topic, r.state) for r in rows]


@dataclass(frozen=True)
class Prefixes:
    """Where each older form must have ended in one log: the first position of a
    checksummed row, and of a placed one (None: none yet, or not asked)."""

    first_checked: int | None = None
    first_placed: int | None = None


def check_row(row: Mapping[str, Any], log: str, position: int, prefixes: Prefixes) -> None:
    """Raise `CorruptRecordError` at ``position`` unless ``row`` matches its checksum and
    its checksum's form may stand there (``prefixes``: only consulted for an older form).
    """
    stored = row[COLUMN]
    form = form_of(None if stored is None else bytes(stored))
    version = row["originator_version"]
    if form is None:
        raise CorruptRecordError(
            log, position, Defect.CHECKSUM, "a checksum of no known form", version
        )
    if form is Form.LEGACY:
        first = prefixes.first_checked
        if first is not None and position > first:
            raise CorruptRecordError(
                log,
                position,
                Defect.CHECKSUM,
                f"checksum missing after the first checksummed row ({first})",
                version,
            )
        return
    content = content_checksum(row["originator_id"], version, row["topic"], bytes(row["state"]))
    if form is Form.CONTENT:
        first = prefixes.first_placed
        if first is not None and position > first:
            raise CorruptRecordError(
                log,
                position,
                Defect.CHECKSUM,
                f"a checksum not bound to its position after the first position-bound row "
                f"({first}): the row was moved here, or written by an earlier release",
                version,
            )
        expected = content
    else:
        expected = placed_checksum(content, position)
    if bytes(stored) != expected:
        problem = "the row was altered" if form is Form.CONTENT else "the row was altered or moved"
        raise CorruptRecordError(log, position, Defect.CHECKSUM, problem, version)


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


def first_of_form(schema: str, table: str, position: str, form: Form, where: str = "") -> Composed:
    """The first position (column ``position``) of a row whose checksum has ``form`` or
    a newer one (CONTENT: any checksum; PLACED: a placed one), under ``where``."""
    condition = (
        SQL("{column} IS NOT NULL")
        if form is Form.CONTENT
        else SQL(f"octet_length({{column}}) = {PLACED_SIZE}")
    )
    return SQL(
        "SELECT min({position}) AS first FROM {schema}.{table} WHERE {condition}{where}"
    ).format(
        position=Identifier(position),
        schema=Identifier(schema),
        table=Identifier(table),
        condition=condition.format(column=Identifier(COLUMN)),
        where=SQL(where),
    )
