"""`costart demo --live` end to end, as a real process: serve, four agents and the RL
group's real programs on 127.0.0.1. Its output tells the story in order, no program
starts before the barrier, and no process of the run is left (checked through the
process table by the run's marker) -- also after a Ctrl-C.

Bounded under load: the demo has its own deadline, each wait here a larger one.
"""

from __future__ import annotations

import json
import os
import queue
import re
import secrets
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from costart.cli.live import MARKER, marked_pids
from tests import child_processes

ROOT = Path(__file__).resolve().parents[2]
DEMO_TIMEOUT_S = 200
WAIT_S = DEMO_TIMEOUT_S + 60


def start_demo(tmp_path: Path, run: str) -> subprocess.Popen[str]:
    env = {**os.environ, MARKER: run, "TMPDIR": str(tmp_path), "COLUMNS": "160"}
    for name in ("COSTART_SERVER", "COSTART_TOKEN", "COSTART_STORE"):
        env.pop(name, None)
    return child_processes.popen(
        [
            sys.executable,
            "-m",
            "costart.cli.main",
            "demo",
            "--live",
            "--timeout",
            str(DEMO_TIMEOUT_S),
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def leftovers(process: subprocess.Popen[str], run: str) -> list[int]:
    """After the demo: the processes of its run still alive (read before this kills
    them, so that even a failed test leaves nothing behind)."""
    if process.poll() is None:
        process.kill()
        process.wait()
    left = marked_pids(run)
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    return left


def in_order(output: str, *steps: str) -> None:
    at = 0
    for step in steps:
        found = output.find(step, at)
        assert found >= 0, f"{step!r} missing after position {at} of:\n{output}"
        at = found + len(step)


def run_dir(tmp_path: Path) -> Path:
    [found] = tmp_path.glob("costart-live-*")
    return found


@pytest.mark.timeout(WAIT_S + 30)
def test_the_live_demo_co_starts_real_programs_and_leaves_no_process(tmp_path: Path) -> None:
    run = secrets.token_hex(8)
    process = start_demo(tmp_path, run)
    try:
        output, _ = process.communicate(timeout=WAIT_S)
    finally:
        left = leftovers(process, run)
    assert process.returncode == 0, output
    assert left == []
    # The board's address, and the owner's token in a file only this user reads.
    board = re.search(
        r"the board: (http://127\.0\.0\.1:\d+/)\n  alice's login token: (\S+)\n", output
    )
    assert board is not None, output
    token_file = Path(board.group(2))
    assert token_file.stat().st_mode & 0o777 == 0o600
    assert token_file.read_text().strip() not in output
    in_order(
        output,
        "group rl-live submitted: PENDING",
        "every member placed (attempt 1): PLACED",
        "claim weights READY",
        "barrier released, the group is RUNNING",
        "started (attempt 1)",
        "rendezvous: 4 peers answer",
        "step 2/8",
        "*** kill -KILL",
        "rollout task 0 FAILED",
        "rollout relaunching",
        "rollout task 0 started (attempt 2)",
        "training done",
        "trainer task 0 exited 0",
        "trainer SUCCEEDED",
        "STOPPED",
        "group SUCCEEDED",
        "task processes the agents started have exited",
        "every process the demo started has exited",
    )
    for service in ("rollout", "reward"):  # the services, stopped by the success policy
        assert f"{service} STOPPED (group succeeded)" in output
    assert not re.search(r"\d{13,}", output), "raw nanoseconds in the demo's output"
    # Every program recorded its start: none before the barrier's commit, and the killed
    # replica started again (a second process of rollout task 0).
    starts = [json.loads(p.read_text()) for p in (run_dir(tmp_path) / "starts").glob("*.json")]
    released = barrier_times(run_dir(tmp_path) / "store")
    assert len(released) == 1
    assert len(starts) == 6  # trainer, 3 rollouts, reward, and the relaunched replica
    assert all(s["started_ns"] > released[0] for s in starts)
    assert sum((s["member"], s["task"]) == ("rollout", 0) for s in starts) == 2


def barrier_times(store: Path) -> list[int]:
    """``BarrierReleased`` controller times, from the kept log (read by the CLI)."""
    read = subprocess.run(
        [
            sys.executable,
            "-m",
            "costart.cli.main",
            "--store",
            str(store),
            "events",
            "rl-live",
            "-o",
            "json",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return [e["at_ns"] for e in json.loads(read.stdout) if e["event"] == "BarrierReleased"]


@pytest.mark.timeout(WAIT_S + 30)
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_an_interrupt_in_the_middle_of_the_live_demo_stops_every_process(
    tmp_path: Path, sig: signal.Signals
) -> None:
    run = secrets.token_hex(8)
    process = start_demo(tmp_path, run)
    lines: queue.Queue[str] = queue.Queue()
    assert process.stdout is not None
    reader = threading.Thread(
        target=lambda: [lines.put(line) for line in process.stdout], daemon=True
    )  # type: ignore[union-attr]
    reader.start()
    seen: list[str] = []
    try:
        until = time.monotonic() + WAIT_S
        while not any("barrier released" in line for line in seen):
            assert time.monotonic() < until, "".join(seen)
            assert process.poll() is None or not lines.empty(), "".join(seen)
            try:
                seen.append(lines.get(timeout=1))
            except queue.Empty:
                continue
        assert marked_pids(run), "the run's processes should be up"
        process.send_signal(sig)
        code = process.wait(timeout=WAIT_S)
        reader.join(timeout=WAIT_S)
    finally:
        left = leftovers(process, run)
    while not lines.empty():
        seen.append(lines.get())
    output = "".join(seen)
    assert code != 0, output  # the whole output says where the signal found the demo
    in_order(output, "barrier released", "interrupted", "every process the demo started has exited")
    assert left == []


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--live", "--walkthrough"], "two different demos"),
        (["--live", "--timeout", "0"], "--timeout must be longer than 0 seconds"),
        (["--live", "--timeout", "nan"], "--timeout must be longer than 0 seconds"),
    ],
)
def test_bad_live_demo_options_are_refused_before_anything_starts(
    tmp_path: Path, args: list[str], message: str
) -> None:
    from typer.testing import CliRunner

    from costart.cli.main import app

    result = CliRunner().invoke(app, ["demo", *args], env={"TMPDIR": str(tmp_path)})
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert list(tmp_path.iterdir()) == []  # no run directory, no process
