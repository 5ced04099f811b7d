"""The replay log is opened by the backend the registry chooses, never by URL scheme."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from costart.bootstrap import Settings, bootstrap
from costart.eventlog.backends import (
    PERSISTENCE_MODULE,
    REGISTRY,
    StoreBackend,
    backend_for,
    open_replay_log,
)
from costart.eventlog.replay_log import ReplayLog
from costart.replay.rebuild import rebuild
from costart.store.replay_log import LmdbReplayLog


def test_every_registered_backend_opens_its_own_replay_log() -> None:
    inherited = [
        module
        for module in REGISTRY
        if type(backend_for({PERSISTENCE_MODULE: module})).open_replay_log
        is StoreBackend.open_replay_log
    ]
    assert inherited == []


def test_a_backend_without_a_replay_log_refuses_naming_the_location() -> None:
    class NoReplay(StoreBackend):
        module = "some.module"

        def lead(self, env, lease_ns):  # type: ignore[no-untyped-def]
            raise NotImplementedError

    with pytest.raises(ValueError, match=r"the some.module store has no replay log \(x\)"):
        NoReplay().open_replay_log("x", {})


def test_a_directory_opens_as_its_lmdb_log(tmp_path: Path) -> None:
    controller = bootstrap(Settings(store=str(tmp_path), cluster=None))
    controller.close()
    with open_replay_log(str(tmp_path), {}) as log:
        assert isinstance(log, LmdbReplayLog)
        assert isinstance(log, ReplayLog)
        assert log.path == tmp_path
        assert rebuild(log.source).groups == {}


def test_a_location_no_backend_takes_is_refused_naming_it() -> None:
    with pytest.raises(ValueError, match=r"'mysql://db/x': one store backend must take it"):
        open_replay_log("mysql://db/x", {})


def test_a_directory_without_a_log_is_not_read_as_an_empty_one(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no LMDB log in"):
        open_replay_log(str(tmp_path), {})


def test_the_cli_loads_no_database_driver_for_a_directory_store() -> None:
    """The registry resolves a backend on first use: the CLI imports no PostgreSQL code."""
    code = (
        "import sys, costart.cli.main; "
        "print(sorted(m for m in sys.modules if m.startswith(('psycopg', 'costart.pgstore'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert ast.literal_eval(out.stdout.strip()) == []
