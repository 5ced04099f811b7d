"""PostgreSQL persistence for the Controller: ``PERSISTENCE_MODULE=costart.pgstore``.

The eventsourcing library's postgres module (psycopg 3) with what costart needs on top:
gapless log positions, a lease with an epoch per log, and appends fenced by that epoch
in their own transaction (ADR 0010). Settings: the library's ``POSTGRES_*`` keys (or a
``postgresql://`` URL through `env_for_url`), ``COSTART_LEASE_EPOCH`` and
``COSTART_PG_READ_ONLY``.

This module must define exactly one ``InfrastructureFactory`` subclass,
``Factory``: ``InfrastructureFactory.construct`` looks for it here.
"""

from costart.pgstore.errors import FencedError
from costart.pgstore.factory import Factory
from costart.pgstore.gaps import first_gap
from costart.pgstore.ha import fenced_env, open_factory, open_lease
from costart.pgstore.lease import LeaseRecord, PgLease
from costart.pgstore.recorder import CostartApplicationRecorder
from costart.pgstore.settings import LEASE_EPOCH, READ_ONLY, env_for_url, is_url, redact

__all__ = [
    "LEASE_EPOCH",
    "READ_ONLY",
    "CostartApplicationRecorder",
    "Factory",
    "FencedError",
    "LeaseRecord",
    "PgLease",
    "env_for_url",
    "fenced_env",
    "first_gap",
    "is_url",
    "open_factory",
    "open_lease",
    "redact",
]
