"""Shared test setup: hypothesis profiles (a bounded CI profile, a larger local one)."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci",
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    derandomize=True,
)
settings.register_profile(
    "slow", max_examples=2000, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
# `make mutate`: the suite runs once per mutant, so fewer examples (still fixed seeds).
settings.register_profile("mutate", parent=settings.get_profile("ci"), max_examples=20)
# `make test-explore`: fresh seeds (printed by pytest's hypothesis plugin) and more examples.
settings.register_profile(
    "explore",
    max_examples=500,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    derandomize=False,
    print_blob=True,
)
_PROFILE = os.environ.get("COSTART_PROFILE", "ci")
settings.load_profile(_PROFILE if _PROFILE in ("slow", "mutate", "explore") else "ci")

import logging  # noqa: E402

from costart.logs import configure_logging  # noqa: E402

configure_logging(level=logging.WARNING)

from collections.abc import Iterator  # noqa: E402

import pytest  # noqa: E402

from tests.pg_support import session_server_url  # noqa: E402


@pytest.fixture(scope="session")
def pg_url() -> Iterator[str]:
    """A PostgreSQL server the tests may create schemas in: ``$COSTART_TEST_POSTGRES_URL``
    (CI starts one), else a throwaway server started for this session (never skipped)."""
    yield from session_server_url()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Print the stateful runs' counts of commands and events, so every CI log shows
    which phases the random sequences reached."""
    import sys

    stateful = sys.modules.get("tests.domain.test_stateful")
    for report in getattr(stateful, "REPORTS", []):
        terminalreporter.write_line(report)
