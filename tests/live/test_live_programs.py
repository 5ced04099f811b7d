"""The live scenario's programs as real processes, without an agent: the environment an
agent gives them is written by hand. Every wait is a bounded poll."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from costart.cli.live.spec import free_port_block
from tests import child_processes

LIVE = Path(__file__).resolve().parents[2] / "scenarios" / "live"
DEADLINE_S = 30


def identity(
    member: str, task: int, port: int | None, peers: dict[str, list[str]]
) -> dict[str, str]:
    env = {
        **os.environ,
        "COSTART_GROUP": "rl-live",
        "COSTART_MEMBER": member,
        "COSTART_TASK": str(task),
        "COSTART_ATTEMPT": "1",
        "COSTART_NODE": "node-1",
        "COSTART_PEERS": json.dumps(peers),
    }
    if port is not None:
        env["COSTART_PORT"] = str(port)
    return env


def start(program: str, env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        return child_processes.popen(
            [sys.executable, program], cwd=LIVE, env=env, stdout=out, stderr=subprocess.STDOUT
        )


def answer(port: int, path: str) -> dict[str, object] | None:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=1) as got:
            return dict(json.loads(got.read()))
    except OSError:
        return None


def wait_for(check, what: str) -> None:  # type: ignore[no-untyped-def]
    until = time.monotonic() + DEADLINE_S
    while not check():
        assert time.monotonic() < until, f"no {what} within {DEADLINE_S}s"
        time.sleep(0.05)


def records(folder: Path) -> list[dict[str, object]]:
    return [json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))]


def test_a_rollout_replica_records_its_start_serves_and_stops_on_sigterm(tmp_path: Path) -> None:
    port = free_port_block(1, set(), 30_000)
    env = identity("rollout", 2, port, {}) | {"LIVE_STARTS_DIR": str(tmp_path / "starts")}
    process = start("rollout.py", env, tmp_path / "rollout.log")
    try:
        wait_for(lambda: answer(port, "/healthz") is not None, "answer on /healthz")
        batch = answer(port, "/generate?step=1")
        assert batch is not None and batch["replica"] == "rollout-2"
        [record] = records(tmp_path / "starts")
        assert (record["member"], record["task"], record["pid"]) == ("rollout", 2, process.pid)
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=DEADLINE_S) == 0
    finally:
        process.kill()
    assert "stopped (SIGTERM)" in (tmp_path / "rollout.log").read_text()


def test_the_trainer_meets_its_peers_after_the_start_then_trains_and_exits_0(
    tmp_path: Path,
) -> None:
    taken: set[int] = set()
    rollout, reward = free_port_block(2, taken, 31_000), free_port_block(1, taken, 31_000)
    peers = {
        "rollout": [f"127.0.0.1:{rollout}", f"127.0.0.1:{rollout + 1}"],
        "reward": [f"127.0.0.1:{reward}"],
    }
    starts = {"LIVE_STARTS_DIR": str(tmp_path / "starts")}
    fast = {"TRAIN_STEPS": "3", "TRAIN_STEP_S": "0.05", "TRAIN_RENDEZVOUS_S": "30"}
    # The trainer first: it waits for peers that do not serve yet (its own rendezvous).
    trainer = start(
        "trainer.py", identity("trainer", 0, None, peers) | starts | fast, tmp_path / "t.log"
    )
    services = []
    try:
        wait_for(lambda: "trainer" in str(records(tmp_path / "starts")), "trainer start record")
        assert trainer.poll() is None, "the trainer must wait for its peers, not give up"
        for i in range(2):
            env = identity("rollout", i, rollout + i, peers) | starts
            services.append(start("rollout.py", env, tmp_path / f"r{i}.log"))
        services.append(
            start("reward.py", identity("reward", 0, reward, peers) | starts, tmp_path / "w.log")
        )
        assert trainer.wait(timeout=DEADLINE_S) == 0
    finally:
        for process in [trainer, *services]:
            process.kill()
            process.wait()
    output = (tmp_path / "t.log").read_text()
    assert "rendezvous: 3 peers answer" in output
    assert "step 3/3" in output and "training done" in output


def test_a_trainer_whose_peers_never_answer_gives_up_with_exit_1(tmp_path: Path) -> None:
    port = free_port_block(1, set(), 32_000)
    peers = {"rollout": [f"127.0.0.1:{port}"], "reward": [f"127.0.0.1:{port}"]}
    env = identity("trainer", 0, None, peers) | {"TRAIN_RENDEZVOUS_S": "0.5"}
    trainer = start("trainer.py", env, tmp_path / "t.log")
    try:
        assert trainer.wait(timeout=DEADLINE_S) == 1
    finally:
        trainer.kill()
    assert f"no answer from 127.0.0.1:{port}" in (tmp_path / "t.log").read_text()


def test_a_program_not_started_by_an_agent_says_what_is_missing(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("COSTART_")}
    done = subprocess.run(
        [sys.executable, "reward.py"],
        check=False,
        cwd=LIVE,
        env=env,
        capture_output=True,
        text=True,
        timeout=DEADLINE_S,
    )
    assert done.returncode == 1
    assert "not started by a costart agent" in done.stderr and "COSTART_GROUP" in done.stderr


def test_the_download_writes_its_file_whole_and_only_after_its_delay(tmp_path: Path) -> None:
    out = tmp_path / "w" / "weights.bin"
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "download_weights.py", "--out", str(out), "--seconds", "0.3"],
        check=False,
        cwd=LIVE,
        capture_output=True,
        timeout=DEADLINE_S,
    )
    assert done.returncode == 0
    assert time.monotonic() - started >= 0.3
    assert out.stat().st_size == 32 * 1024
    assert list(out.parent.iterdir()) == [out]  # no partial file left beside it


@pytest.mark.parametrize(
    "program", ["rollout.py", "reward.py", "trainer.py", "download_weights.py"]
)
def test_the_programs_need_only_the_standard_library(program: str) -> None:
    code = (LIVE / program).read_text() + (LIVE / "live_task.py").read_text()
    third_party = {"httpx", "msgspec", "costart", "structlog", "requests"}
    imported = {
        line.split()[1].split(".")[0]
        for line in code.splitlines()
        if line.startswith(("import ", "from "))
    }
    assert imported & third_party == set()
