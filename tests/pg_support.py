"""PostgreSQL for the tests: one server per session, one fresh schema per test."""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Final
from urllib.parse import urlsplit

import psycopg
from psycopg import sql

from costart.pgstore.local_server import LocalServer

PG_URL_VARIABLE: Final = "COSTART_TEST_POSTGRES_URL"


def session_server_url() -> Iterator[str]:
    configured = os.environ.get(PG_URL_VARIABLE)
    if configured:
        yield configured
        return
    with LocalServer() as server:
        yield server.url


def with_schema(url: str, schema: str) -> str:
    return urlsplit(url)._replace(query=f"schema={schema}").geturl()


def base_url(url: str) -> str:
    return urlsplit(url)._replace(query="").geturl()


@contextmanager
def fresh_schema(url: str) -> Iterator[str]:
    """A new empty schema; yields the store URL naming it, drops it afterwards."""
    name = "t_" + secrets.token_hex(6)
    with psycopg.connect(base_url(url), autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(name)))
    try:
        yield with_schema(url, name)
    finally:
        with psycopg.connect(base_url(url), autocommit=True) as conn:
            # Sessions of a test's leftover pools would block the drop: end them.
            conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE pid <> pg_backend_pid() AND datname = current_database() "
                "AND backend_type = 'client backend' AND state = 'idle in transaction'"
            )
            conn.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(name)))
