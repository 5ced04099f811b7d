"""The real server process shared by the REST test modules."""

from __future__ import annotations

from tests.rest.test_server import server  # noqa: F401  (the module-scoped fixture)
