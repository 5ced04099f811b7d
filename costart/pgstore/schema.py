"""The SQL costart adds to the library's tables: the lease and the epoch check.

The lease is one row per log (``name`` = the events table): who holds it, its epoch
(only ever grows) and when it expires, in the database's clock — hosts need not agree on
time, they all ask the server. Every append is one call of a function that checks the
epoch with a share lock on the lease row before inserting, so a lease change
(``UPDATE``, an exclusive row lock) and an append are ordered: once a new epoch is
committed, no append of the old one can commit.

The host's leadership term (ADR 0027) is one row per log in its own table: an append
that carries a term upserts it to the greater of the stored and its own (a row lock held
to the end of the append's one statement) and is refused when the stored one is newer.
"""

from __future__ import annotations

from typing import Final

from psycopg.sql import SQL, Composed, Identifier, Literal

from costart.pgstore.checksums import placed_sql
from costart.pgstore.errors import FENCED_SQLSTATE, TERM_SQLSTATE

LEASE_TABLE: Final = "costart_lease"
TERM_TABLE: Final = "costart_host_term"


def create_lease_table(schema: str) -> Composed:
    return SQL(
        "CREATE TABLE IF NOT EXISTS {schema}.{table} ("
        "name text PRIMARY KEY, "
        "holder text NOT NULL, "
        "epoch bigint NOT NULL CHECK (epoch > 0), "
        "expires timestamptz NOT NULL)"
    ).format(schema=Identifier(schema), table=Identifier(LEASE_TABLE))


def create_term_table(schema: str) -> Composed:
    return SQL(
        "CREATE TABLE IF NOT EXISTS {schema}.{table} ("
        "name text PRIMARY KEY, "
        "term bigint NOT NULL CHECK (term > 0))"
    ).format(schema=Identifier(schema), table=Identifier(TERM_TABLE))


def _claim(schema: str, name: str, term: str, into: str) -> Composed:
    """Upsert the log's term to the greater of the stored one and ``term``, and read the
    result into ``into`` (plpgsql: the names are its variables)."""
    return SQL(
        "INSERT INTO {schema}.{table} AS t (name, term) VALUES ({name}, {term}) "
        "ON CONFLICT (name) DO UPDATE SET term = greatest(t.term, excluded.term) "
        "RETURNING t.term INTO {into}; "
    ).format(
        schema=Identifier(schema),
        table=Identifier(TERM_TABLE),
        name=SQL(name),
        term=SQL(term),
        into=SQL(into),
    )


def _refuse_older(term: str, stored: str) -> Composed:
    return SQL(
        "IF {stored} > {term} THEN "
        "  RAISE EXCEPTION 'write fenced: host term % is older than the stored term %', "
        "    {term}, {stored} USING ERRCODE = {sqlstate}, DETAIL = {stored}::text; "
        "END IF; "
    ).format(term=SQL(term), stored=SQL(stored), sqlstate=Literal(TERM_SQLSTATE))


def create_claim_function(schema: str, function: str) -> Composed:
    """Claim a host term for a log: stored if newer, refused if older (one statement)."""
    return SQL(
        "CREATE OR REPLACE FUNCTION {schema}.{function}(lease_name text, host_term bigint) "
        "RETURNS bigint LANGUAGE plpgsql AS $body$ "
        "DECLARE stored bigint; "
        "BEGIN {claim}{refuse}RETURN stored; END $body$"
    ).format(
        schema=Identifier(schema),
        function=Identifier(function),
        claim=_claim(schema, "lease_name", "host_term", "stored"),
        refuse=_refuse_older("host_term", "stored"),
    )


def call_claim(schema: str, function: str) -> Composed:
    return SQL("SELECT {schema}.{function}(%s, %s) AS term").format(
        schema=Identifier(schema), function=Identifier(function)
    )


def select_term(schema: str) -> Composed:
    return SQL("SELECT term FROM {schema}.{table} WHERE name = %s").format(
        schema=Identifier(schema), table=Identifier(TERM_TABLE)
    )


def create_append_function(
    schema: str, table: str, stored_event_type: str, function: str, channel: str
) -> Composed:
    """One server-side statement per append: check the epoch (share-locking the lease
    row) or the host's term (claiming it, see `create_claim_function`), lock the table (the library's rule: commit order = position order), notify
    subscribers, and insert at positions max + 1, max + 2, ..., each row with the
    content checksum the client computed for it bound to the row's position (the placed
    form, `costart.pgstore.checksums`: only here is the position known).

    Positions come from the table, not the ``bigserial`` sequence: a sequence hands out
    numbers that a rolled-back insert or a server crash never returns, and the
    Controller requires a log without holes (the next append lands at position + 1).
    Being one statement, the transaction never waits on the client: a paused leader
    cannot sit on the lease row's lock and so block its own takeover.
    """
    return SQL(
        "CREATE OR REPLACE FUNCTION {schema}.{function}"
        "(lease_name text, expected bigint, host_term bigint, events {schema}.{type}[], "
        "checksums bytea[]) "
        "RETURNS SETOF bigint LANGUAGE plpgsql AS $body$ "
        "DECLARE stored bigint; stored_term bigint; last bigint; "
        "BEGIN "
        "  IF expected IS NOT NULL THEN "
        "    SELECT epoch INTO stored FROM {schema}.{lease} WHERE name = lease_name FOR SHARE; "
        "    IF stored IS DISTINCT FROM expected THEN "
        "      RAISE EXCEPTION 'write fenced: lease epoch % is not the stored epoch %', "
        "        expected, coalesce(stored, 0) "
        "        USING ERRCODE = {sqlstate}, DETAIL = coalesce(stored, 0)::text; "
        "    END IF; "
        "  END IF; "
        "  IF host_term IS NOT NULL THEN {claim}{refuse}END IF; "
        "  LOCK TABLE {schema}.{table} IN EXCLUSIVE MODE; "
        "  NOTIFY {channel}; "
        "  SELECT coalesce(max(notification_id), 0) INTO last FROM {schema}.{table}; "
        "  RETURN QUERY INSERT INTO {schema}.{table} "
        "    (originator_id, originator_version, topic, state, checksum, notification_id) "
        "    SELECT e.originator_id, e.originator_version, e.topic, e.state, {placed}, "
        "      last + e.n "
        "    FROM unnest(events) WITH ORDINALITY "
        "      AS e(originator_id, originator_version, topic, state, n) "
        "    ORDER BY e.n RETURNING notification_id; "
        "END $body$"
    ).format(
        schema=Identifier(schema),
        function=Identifier(function),
        type=Identifier(stored_event_type),
        lease=Identifier(LEASE_TABLE),
        table=Identifier(table),
        channel=Identifier(channel),
        sqlstate=Literal(FENCED_SQLSTATE),
        claim=_claim(schema, "lease_name", "host_term", "stored_term"),
        refuse=_refuse_older("host_term", "stored_term"),
        placed=placed_sql("checksums[e.n]", "last + e.n"),
    )


def call_append(schema: str, function: str) -> Composed:
    return SQL("SELECT id FROM {schema}.{function}(%s, %s, %s, %s, %s) AS appended(id)").format(
        schema=Identifier(schema), function=Identifier(function)
    )
