"""Shared test setup: hypothesis profiles (a bounded CI profile, a larger local one)."""

from __future__ import annotations

import os
import sys

from hypothesis import HealthCheck, Phase, settings

from tests.bytecode_cache import cache_bytecode

# This process and every Python process the tests start keep compiled modules in one
# cache instead of compiling them anew each start (see tests/bytecode_cache.py).
_BYTECODE_CACHE = cache_bytecode(os.environ)
if _BYTECODE_CACHE is not None:
    sys.pycache_prefix = _BYTECODE_CACHE
    sys.dont_write_bytecode = False

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
# `make mutate`: the suite runs once per mutant, so fewer examples (still fixed seeds),
# and no shrinking: a mutant is killed by the first failing example; shrinking it (many
# more runs of a stateful machine) would only make a kill cost more than a survivor.
settings.register_profile(
    "mutate",
    parent=settings.get_profile("ci"),
    max_examples=20,
    phases=(Phase.explicit, Phase.reuse, Phase.generate),
)
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

from costart.logging_setup import configure_logging  # noqa: E402

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
    """Print the stateful runs' counts of commands and events, and what the malformed
    inputs took at each way in, so every CI log shows what the random runs reached."""
    import sys

    stateful = sys.modules.get("tests.domain.test_stateful")
    for report in getattr(stateful, "REPORTS", []):
        terminalreporter.write_line(report)
    malformed = sys.modules.get("tests.test_malformed_input")
    for line in malformed.report() if malformed is not None else []:
        terminalreporter.write_line(line)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Under `make mutate`, run the quickest tests first. mutmut stops a mutant's run at
    its first failing test (``-x``), so a mutant a direct test kills in milliseconds is not
    first driven through a stateful run of several seconds. The durations are mutmut's own
    (``mutmut-stats.json`` in the directory it runs the tests from); elsewhere, and for a
    test it has not timed, the order is pytest's."""
    if _PROFILE != "mutate":
        return
    import json
    from pathlib import Path

    stats = Path("mutmut-stats.json")
    if not stats.is_file():
        return
    seconds: dict[str, float] = json.loads(stats.read_text()).get("duration_by_test", {})
    items.sort(key=lambda item: seconds.get(item.nodeid, 0.0))
