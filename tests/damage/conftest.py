"""The damage suite's backends: the store contract's ``store`` fixture (LMDB and
PostgreSQL, a fresh directory or schema each)."""

from __future__ import annotations

from tests.contract.conftest import store  # noqa: F401  (the parametrized fixture)
