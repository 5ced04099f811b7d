"""The service runs from `costart.server` alone: a host program opens it on an LMDB
store, it answers ``/healthz``, and it stops cleanly (the lease handed over), with the
command line never imported."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests import child_processes
from tests.rest.serving import DEADLINE_S, ROOT, free_port


def test_a_host_program_runs_and_stops_the_service_without_the_command_line(tmp_path: Path):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("PERSISTENCE_MODULE", None)  # the store's own backend: LMDB for a directory
    process = child_processes.popen(
        [
            sys.executable,
            "-m",
            "tests.server.host_program",
            str(tmp_path / "store"),
            str(free_port()),
        ],
        env=env,
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    out, err = process.communicate(timeout=2 * DEADLINE_S)
    assert process.returncode == 0, err.decode()
    answer = json.loads(out.decode().strip().splitlines()[-1])
    assert answer["health"] == 200
    assert answer["stopped"] is True
    assert answer["run"] == [None]  # a graceful stop, not a lost lease
    assert answer["successor_epoch"] == 2  # the first released the lease when it stopped
    assert answer["typer"] is False
    assert answer["successor_run"] is None
