"""Configuration of the PostgreSQL store: a URL mapped to the library's settings, and
the two settings costart adds.

``--store postgresql://user:password@host:port/dbname[?schema=NAME]`` becomes
``PERSISTENCE_MODULE=costart.pgstore`` with the library's ``POSTGRES_*`` keys, so the
Controller, the CLI and the tools open the same log the way any eventsourcing
application would. Like every library key, ours may carry the application's name as a
prefix (``COSTART_COSTART_LEASE_EPOCH``).
"""

from __future__ import annotations

from typing import Final
from urllib.parse import parse_qs, unquote, urlsplit

from eventsourcing.persistence import InfrastructureFactory
from eventsourcing.postgres import PostgresFactory

MODULE: Final = "costart.pgstore"
LEASE_EPOCH: Final = "COSTART_LEASE_EPOCH"
"""The lease epoch the application recorder fences its appends with (unset: unfenced)."""
READ_ONLY: Final = "COSTART_PG_READ_ONLY"
"""When true, every connection runs with ``default_transaction_read_only=on`` (the
server refuses writes) and no table is created: how replay opens a live log."""
SCHEMES: Final = ("postgresql", "postgres")
DEFAULT_PORT: Final = 5432


def is_url(store: str) -> bool:
    """Whether a ``--store`` value names a PostgreSQL server rather than a directory."""
    return urlsplit(store).scheme in SCHEMES and "://" in store


def env_for_url(url: str) -> dict[str, str]:
    """The persistence settings for ``postgresql://user:password@host:port/dbname``,
    optionally ``?schema=NAME`` (an existing schema; default ``public``)."""
    parts = urlsplit(url)
    if parts.scheme not in SCHEMES:
        raise ValueError(f"not a PostgreSQL URL: {redact(url)}")
    dbname = unquote(parts.path.lstrip("/"))
    if not dbname or not parts.hostname or not parts.username:
        raise ValueError(
            f"a PostgreSQL store URL names user, host and database: {redact(url)} "
            "(postgresql://USER:PASSWORD@HOST:PORT/DBNAME)"
        )
    env = {
        InfrastructureFactory.PERSISTENCE_MODULE: MODULE,
        PostgresFactory.POSTGRES_DBNAME: dbname,
        PostgresFactory.POSTGRES_HOST: parts.hostname,
        PostgresFactory.POSTGRES_PORT: str(parts.port or DEFAULT_PORT),
        PostgresFactory.POSTGRES_USER: unquote(parts.username),
        PostgresFactory.POSTGRES_PASSWORD: unquote(parts.password or ""),
    }
    schema = parse_qs(parts.query).get("schema")
    if schema:
        env[PostgresFactory.POSTGRES_SCHEMA] = schema[-1]
    return env


def redact(url: str) -> str:
    """The URL without its password, for messages and logs."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return parts._replace(netloc=netloc).geturl()
