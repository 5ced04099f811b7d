"""The live demo's processes: stopped by process group, and nothing that carries the
run's marker survives the sweep -- checked through the process table."""

from __future__ import annotations

import os
import secrets
import sys
import time
from pathlib import Path

import pytest

from costart.cli.live.processes import MARKER, Processes, alive, marked_pids

DEADLINE_S = 30
# A parent that ignores SIGTERM and starts a grandchild that does too: only the group
# SIGKILL ends them.
STUBBORN = (
    "import signal, subprocess, sys, time\n"
    "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
    "child = subprocess.Popen([sys.executable, '-c', "
    "'import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)'])\n"
    "print(child.pid, flush=True)\n"
    "time.sleep(600)\n"
)
# A grandchild that leaves the group (its own session): only the marker finds it.
ESCAPING = (
    "import subprocess, sys, time\n"
    "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'], "
    "start_new_session=True)\n"
    "print(child.pid, flush=True)\n"
    "time.sleep(600)\n"
)


def first_line(path: Path) -> str:
    until = time.monotonic() + DEADLINE_S
    while not path.read_text().strip():
        assert time.monotonic() < until, f"{path} stayed empty"
        time.sleep(0.05)
    return path.read_text().split()[0]


@pytest.fixture
def processes(tmp_path: Path):  # type: ignore[no-untyped-def]
    procs = Processes(secrets.token_hex(8), dict(os.environ))
    yield procs
    procs.sweep(DEADLINE_S)  # never leave a test's process behind


def test_stop_all_ends_a_process_group_that_ignores_sigterm(
    processes: Processes, tmp_path: Path
) -> None:
    log = tmp_path / "stubborn.log"
    leader = processes.start("stubborn", [sys.executable, "-c", STUBBORN], log, tmp_path)
    grandchild = int(first_line(log))
    assert alive(grandchild)
    codes = processes.stop_all(grace_s=0.5)
    assert codes["stubborn"] == -9  # killed after the grace period
    assert not alive(leader.pid)
    until = time.monotonic() + DEADLINE_S
    while alive(grandchild):  # reparented: its new parent reaps it
        assert time.monotonic() < until, "the grandchild outlived its group's SIGKILL"
        time.sleep(0.05)
    assert marked_pids(processes.run) == []


def test_the_sweep_finds_a_process_that_left_its_group_by_the_marker(
    processes: Processes, tmp_path: Path
) -> None:
    log = tmp_path / "escaping.log"
    processes.start("escaping", [sys.executable, "-c", ESCAPING], log, tmp_path)
    escaped = int(first_line(log))
    assert escaped in marked_pids(processes.run)
    processes.stop_all(grace_s=5)
    assert alive(escaped), "a process in its own session is out of reach of its old group"
    assert processes.sweep(DEADLINE_S) == [escaped]
    assert not alive(escaped)
    assert marked_pids(processes.run) == []


def test_a_process_of_another_run_is_not_swept(processes: Processes, tmp_path: Path) -> None:
    other = Processes(secrets.token_hex(8), dict(os.environ))
    stranger = other.start(
        "other",
        [sys.executable, "-c", "import time; time.sleep(600)"],
        tmp_path / "o.log",
        tmp_path,
    )
    try:
        assert processes.sweep(DEADLINE_S) == []
        assert alive(stranger.pid)
        assert marked_pids(other.run) == [stranger.pid]
    finally:
        other.stop_all(grace_s=5)


def test_every_started_process_carries_the_marker(processes: Processes, tmp_path: Path) -> None:
    log = tmp_path / "env.log"
    process = processes.start(
        "env", [sys.executable, "-c", f"import os; print(os.environ['{MARKER}'])"], log, tmp_path
    )
    assert process.wait(timeout=DEADLINE_S) == 0
    assert log.read_text().strip() == processes.run


def test_one_name_is_started_once(processes: Processes, tmp_path: Path) -> None:
    processes.start("a", [sys.executable, "-c", "pass"], tmp_path / "a.log", tmp_path)
    with pytest.raises(ValueError, match="started already"):
        processes.start("a", [sys.executable, "-c", "pass"], tmp_path / "a.log", tmp_path)
