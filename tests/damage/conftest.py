"""The damage suite's backends: the ``store`` fixture of the logs kept at rest (LMDB and
PostgreSQL, a fresh directory or schema each), and the demo run on it."""

from __future__ import annotations

from tests.contract.conftest import store  # noqa: F401  (the parametrized fixture)
from tests.damage.demo_store import demo  # noqa: F401  (the demo run on that store)
