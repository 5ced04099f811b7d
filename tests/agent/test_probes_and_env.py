"""Claim probes of every kind, the task's environment, and the launch ledger."""

from __future__ import annotations

import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from costart.agent import NodeTask, TaskKey
from costart.agent.accounts import Accounts
from costart.agent.ledger import LaunchRecord, Ledger
from costart.agent.probe_targets import TargetPolicy, parse_allow
from costart.agent.probes import ProbeLoop, ProbeResult, TaskDir, check
from costart.agent.taskenv import task_env
from costart.domain import Probe, RunSpec
from costart.projections import MemberView, TaskView
from tests.agent.harness import wait_until

MS = 10**6


# The agent's own account, and a node that lets probes reach any port of 127.0.0.1 (what
# each is refused is tests/agent/test_probe_confinement.py's).
OWN = Accounts.agents_own(["o"], allow_root=True).resolve("o")
LOCAL = TargetPolicy(allow=(parse_allow("127.0.0.1/32:*"),))


def probe(kind: str, target: str = "", argv: tuple[str, ...] = (), fail_after: int = 0) -> Probe:
    return Probe("c", kind, 50 * MS, 500 * MS, argv=argv, target=target, fail_after=fail_after)


def here(p: Probe, directory: Path) -> ProbeResult:
    return check(p, TaskDir(directory, "."), {}, account=OWN, targets=LOCAL)


def looping(p: Probe, directory: Path, report) -> ProbeLoop:
    return ProbeLoop(p, TaskDir(directory, "."), {}, report, account=OWN, targets=LOCAL)


class _Answer(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200 if self.path == "/ok" else 503)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def http_url():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Answer)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_each_probe_kind_passes_only_when_its_resource_is_there(tmp_path, http_url):
    (tmp_path / "weights.bin").touch()
    assert here(probe("file", "weights.bin"), tmp_path).ok
    assert not here(probe("file", "missing.bin"), tmp_path).ok
    assert here(probe("exec", argv=("true",)), tmp_path).ok
    failed = here(probe("exec", argv=("false",)), tmp_path)
    assert (failed.ok, failed.detail) == (False, "exit code 1")
    slow = here(probe("exec", argv=("sleep", "5")), tmp_path)
    assert (slow.ok, slow.detail) == (False, "timed out after 0.5s")
    assert here(probe("http", f"{http_url}/ok"), tmp_path).ok
    assert here(probe("http", f"{http_url}/not-yet"), tmp_path).detail == "HTTP 503"
    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        port = listening.getsockname()[1]
        assert here(probe("tcp", f"127.0.0.1:{port}"), tmp_path).ok
    assert not here(probe("tcp", f"127.0.0.1:{port}"), tmp_path).ok


def test_a_probe_loop_reports_ready_once_the_resource_appears(tmp_path):
    verdicts: list[tuple[bool, str]] = []
    loop = looping(probe("file", "late.bin"), tmp_path, lambda *v: verdicts.append(v))
    loop.start()
    (tmp_path / "late.bin").touch()
    wait_until(lambda: verdicts, 10, "a verdict")
    assert verdicts == [(True, "exists")]


def test_a_probe_loop_gives_up_after_fail_after_misses_and_a_cancelled_one_says_nothing(tmp_path):
    verdicts: list[tuple[bool, str]] = []
    looping(probe("file", "never", fail_after=3), tmp_path, lambda *v: verdicts.append(v)).start()
    wait_until(lambda: verdicts, 10, "a verdict")
    assert verdicts[0][0] is False and "missed 3 times" in verdicts[0][1]
    quiet: list[tuple[bool, str]] = []
    loop = looping(probe("file", "never"), tmp_path, lambda *v: quiet.append(v))
    loop.start()
    loop.cancel()
    loop._thread.join(5)
    assert quiet == []


def member(name: str, nodes: list[str], port: int | None) -> MemberView:
    run = RunSpec(argv=("x",), grace_ns=1, log_dir="l", env=(("MODE", "fast"),), port=port)
    return MemberView(
        group="g", group_id="gid", name=name, index=0, kind="job", owner="o", profile="",
        state="RUNNING", desired=len(nodes), min_start=1, min_running=1, run=run,
        tasks=tuple(TaskView(index=i, node=n, attempt=1, state="RUNNING") for i, n in enumerate(nodes)),
    )  # fmt: skip


def test_a_task_learns_its_identity_and_every_members_addresses():
    trainer = member("trainer", ["n1", "n2"], 9100)
    reward = member("reward-model", ["n3"], None)
    task = NodeTask("g", "trainer", 1, "n2", 1, "job", "RUNNING", True, "gid", "PLACED", 2)
    hosts = {"n1": "10.0.0.1", "n2": "10.0.0.2", "n3": "10.0.0.3"}
    env = task_env({"PATH": "/bin"}, task, trainer, [trainer, reward], hosts.__getitem__)
    assert env["PATH"] == "/bin" and env["MODE"] == "fast"
    assert (env["COSTART_MEMBER"], env["COSTART_TASK"], env["COSTART_ATTEMPT"]) == (
        "trainer",
        "1",
        "2",
    )
    assert (env["COSTART_TASKS"], env["COSTART_NODE"], env["COSTART_GROUP_ID"]) == (
        "2",
        "n2",
        "gid",
    )
    assert (env["COSTART_PORT"], env["COSTART_ADDRESS"]) == ("9101", "10.0.0.2:9101")
    assert json.loads(env["COSTART_PEERS"]) == {
        "reward-model": ["10.0.0.3"],
        "trainer": ["10.0.0.1:9100", "10.0.0.2:9101"],
    }
    assert env["COSTART_PEERS_REWARD_MODEL"] == "10.0.0.3"


def test_the_ledger_keeps_launches_across_restarts(tmp_path: Path):
    ledger = Ledger(tmp_path / "state")
    first = LaunchRecord("gid", "m", 0, 1, "g/m/0", pid=123, start_ticks=456)
    ledger.write(LaunchRecord("gid", "m", 0, 1, "g/m/0"))
    ledger.write(first)  # the pid is added once the process runs
    ledger.write(LaunchRecord("gid", "m", 1, 2, "g/m/1"))
    again = Ledger(tmp_path / "state")
    assert [r.key for r in again.records()] == [
        TaskKey("gid", "m", 0, 1),
        TaskKey("gid", "m", 1, 2),
    ]
    assert again.records()[0] == first
    again.remove(TaskKey("gid", "m", 0, 1))
    assert [r.key.task for r in Ledger(tmp_path / "state").records()] == [1]


def test_a_task_never_gets_the_agents_token():
    trainer = member("trainer", ["n1"], None)
    task = NodeTask("g", "trainer", 0, "n1", 1, "job", "RUNNING", True, "gid", "PLACED", 1)
    base = {"PATH": "/bin", "COSTART_AGENT_TOKEN": "secret-a", "COSTART_TOKEN": "secret-b"}
    env = task_env(base, task, trainer, [trainer], lambda node: node)
    assert env["PATH"] == "/bin"
    assert "COSTART_AGENT_TOKEN" not in env and "COSTART_TOKEN" not in env
    assert "secret-a" not in env.values() and "secret-b" not in env.values()
