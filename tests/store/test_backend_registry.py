"""The registry's URL schemes (`costart.eventlog.backends.URL_SCHEMES`) say what each
backend's ``claims`` says, so picking a backend by scheme first never changes the
choice; and naming a directory never loads the PostgreSQL driver (ADR 0078)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from costart.eventlog import backends
from costart.pgstore.settings import SCHEMES

ROOT = Path(__file__).resolve().parents[2]
LOCATIONS = [
    "var/store",
    "/abs/store",
    "relative:colon",
    "postgresql://u:p@h/db",
    "postgres://u@h:5/db",
    "PostgreSQL://u@h/db",
    "mysql://u@h/db",
    "postgres+x://u@h/db",
    "file://x",
]


def test_the_registry_lists_the_schemes_of_each_backend():
    assert set(backends.URL_SCHEMES) == set(backends.REGISTRY)
    assert backends.URL_SCHEMES["costart.pgstore"] == SCHEMES
    assert backends.URL_SCHEMES["costart.store"] == ()


@pytest.mark.parametrize("location", LOCATIONS)
def test_the_scheme_prefilter_picks_what_every_backend_would(location):
    everyone = [
        backends._resolve(m) for m in backends.REGISTRY if backends._resolve(m).claims(location)
    ]
    if len(everyone) == 1:
        assert backends.backend_at(location) is everyone[0]
    else:
        with pytest.raises(ValueError, match="one store backend must take it"):
            backends.backend_at(location)


def test_a_directory_never_loads_the_postgresql_driver():
    code = (
        "import sys; from costart.eventlog.backends import backend_at; backend_at('var/x'); "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('psycopg', 'costart')"
        " and ('pgstore' in m or m.startswith('psycopg'))))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert out.stdout.strip() == "[]"
