"""The SQL costart adds to the library's tables: the lease and the epoch check.

The lease is one row per log (``name`` = the events table): who holds it, its epoch
(only ever grows) and when it expires, in the database's clock — hosts need not agree on
time, they all ask the server. The epoch check is a function the append transaction
calls before its insert; it takes a share lock on the lease row, so a lease change
(``UPDATE``, an exclusive row lock) and an append are ordered: once a new epoch is
committed, no append of the old one can commit.
"""

from __future__ import annotations

from typing import Final

from psycopg.sql import SQL, Composed, Identifier, Literal

from costart.pgstore.errors import FENCED_SQLSTATE

LEASE_TABLE: Final = "costart_lease"
CHECK_EPOCH_FUNCTION: Final = "costart_check_epoch"


def create_lease_table(schema: str) -> Composed:
    return SQL(
        "CREATE TABLE IF NOT EXISTS {schema}.{table} ("
        "name text PRIMARY KEY, "
        "holder text NOT NULL, "
        "epoch bigint NOT NULL CHECK (epoch > 0), "
        "expires timestamptz NOT NULL)"
    ).format(schema=Identifier(schema), table=Identifier(LEASE_TABLE))


def create_check_epoch_function(schema: str) -> Composed:
    # RAISE carries the stored epoch in DETAIL so the client can say which one won.
    return SQL(
        "CREATE OR REPLACE FUNCTION {schema}.{function}(lease_name text, expected bigint) "
        "RETURNS void LANGUAGE plpgsql AS $body$ "
        "DECLARE stored bigint; "
        "BEGIN "
        "  SELECT epoch INTO stored FROM {schema}.{table} WHERE name = lease_name FOR SHARE; "
        "  IF stored IS DISTINCT FROM expected THEN "
        "    RAISE EXCEPTION 'write fenced: lease epoch % is not the stored epoch %', "
        "      expected, coalesce(stored, 0) "
        "      USING ERRCODE = {sqlstate}, DETAIL = coalesce(stored, 0)::text; "
        "  END IF; "
        "END $body$"
    ).format(
        schema=Identifier(schema),
        function=Identifier(CHECK_EPOCH_FUNCTION),
        table=Identifier(LEASE_TABLE),
        sqlstate=Literal(FENCED_SQLSTATE),
    )


def check_epoch(schema: str) -> Composed:
    return SQL("SELECT {schema}.{function}(%s, %s)").format(
        schema=Identifier(schema), function=Identifier(CHECK_EPOCH_FUNCTION)
    )


def gapless_insert(schema: str, table: str, stored_event_type: str) -> Composed:
    """Insert a batch at positions max + 1, max + 2, ... (read under the table lock the
    library takes before inserting), instead of from the ``bigserial`` sequence.

    A sequence hands out numbers that a rolled-back insert or a server crash never
    returns, and the Controller requires a log without holes (position = notification
    id, the next append lands at position + 1): gaps would stop it at every restart.
    """
    return SQL(
        "INSERT INTO {schema}.{table} AS t "
        "(originator_id, originator_version, topic, state, notification_id) "
        "SELECT e.originator_id, e.originator_version, e.topic, e.state, last.id + e.n "
        "FROM unnest(%s::{schema}.{type}[]) WITH ORDINALITY "
        "AS e(originator_id, originator_version, topic, state, n), "
        "(SELECT coalesce(max(notification_id), 0) AS id FROM {schema}.{table}) AS last "
        "ORDER BY e.n "
        "RETURNING notification_id"
    ).format(schema=Identifier(schema), table=Identifier(table), type=Identifier(stored_event_type))
