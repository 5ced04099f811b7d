"""Real processes for the agent's end-to-end tests: `costart serve` (a leader, and a
standby on the same LMDB store) and `costart agent`s on 127.0.0.1, running the member
program `tests/agent/program.py`. Every wait polls a condition until a deadline.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import httpx

from costart.rest.client import ApiError, Client
from tests import child_processes
from tests.ha.procs import free_port

ROOT = Path(__file__).resolve().parents[2]
PROGRAM = Path(__file__).with_name("program.py")
ADMIN = "admin-token-0123456789abcdef"
NODES = ("n1", "n2", "n3", "n4")
T = TypeVar("T")
# Record the spawn with SIGTERM ignored (one short line on O_APPEND), then run the program.
SPAWN = (
    'trap "" TERM; '
    'echo "$COSTART_GROUP_ID $COSTART_MEMBER $COSTART_TASK $COSTART_ATTEMPT" >> "$1"; '
    'trap - TERM; shift; exec "$@"'
)


def wait_until(
    condition: Callable[[], T],
    timeout_s: float,
    what: str | Callable[[], str],
    every_s: float = 0.05,
) -> T:
    """Poll ``condition`` until it returns something truthy; fail naming ``what``.

    ``what`` may be a callable, read only at the failure, so a dump of the logs shows
    what happened during the wait rather than before it.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        result = condition()
        if result:
            return result
        if time.monotonic() > deadline:
            detail = what() if callable(what) else what
            raise AssertionError(f"not within {timeout_s}s: {detail}")
        time.sleep(every_s)


def agent_token(nodes: tuple[str, ...]) -> str:
    return "agent-token-" + "-".join(nodes) + "-0123456789"


def write_files(directory: Path, agents: list[tuple[str, ...]]) -> tuple[Path, Path]:
    """A tokens file (an admin, one agent per node list) and a cluster of 4 nodes with
    3 CPUs each (a group's tasks spread over the nodes; a few groups fit at once)."""
    tokens = [f'[tokens.{ADMIN}]\nuser = "alice"\nrole = "admin"\n']
    for nodes in agents:
        listed = ", ".join(f'"{n}"' for n in nodes)
        tokens.append(
            f'[tokens.{agent_token(nodes)}]\nuser = "agent-{nodes[0]}"\nrole = "agent"\n'
            f"nodes = [{listed}]\n"
        )
    (directory / "tokens.toml").write_text("\n".join(tokens))
    cluster = ['levels = ["rack"]']
    for node in NODES:
        cluster.append(f'[[nodes]]\nname = "{node}"\npath = ["r1"]\ncpu = 3\nmem_gb = 8\n')
    (directory / "cluster.toml").write_text("\n".join(cluster))
    return directory / "tokens.toml", directory / "cluster.toml"


def write_accounts(directory: Path) -> Path:
    """The agents' accounts file: the tests' owner runs on the agent's own account."""
    path = directory / "accounts.toml"
    path.write_text("[owners.alice]\nagent = true\n")
    return path


def child_env() -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("PERSISTENCE_MODULE", None)  # --store selects the LMDB store
    for name in ("COSTART_TOKEN", "COSTART_AGENT_TOKEN"):  # the runner's own: not ours
        env.pop(name, None)
    return env


class Proc:
    """A child process logging to a file."""

    def __init__(
        self, args: list[str], log: Path, cwd: Path, env: dict[str, str] | None = None
    ) -> None:
        self.log = log
        self._out = log.open("w")
        self.process = child_processes.popen(
            args,
            env={**child_env(), **(env or {})},
            cwd=cwd,
            stdout=self._out,
            stderr=subprocess.STDOUT,
        )

    def tail(self) -> str:
        return self.log.read_text()[-4000:]

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(timeout=10)

    def stop(self, timeout_s: float = 20) -> None:
        if self.process.poll() is None:
            self.process.terminate()
        try:
            self.process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self.kill()
        self._out.close()


class Serve(Proc):
    def __init__(self, directory: Path, name: str, *, standby: bool = False) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        args = [
            sys.executable, "-m", "costart.cli.main",
            "--store", str(directory / "store"),
            "--cluster", str(directory / "cluster.toml"),
            "serve",
            "--tokens", str(directory / "tokens.toml"),
            "--port", str(self.port),
            "--interval", "0.1",
            "--lease-duration", "2",
        ]  # fmt: skip
        if standby:
            args.append("--standby")
        super().__init__(args, directory / f"{name}.log", directory)

    def wait_serving(self, timeout_s: float = 30, statuses: tuple[int, ...] = (200,)) -> None:
        """Until /healthz answers one of ``statuses`` (a standby answers 503 until it
        leads)."""

        def up() -> bool:
            if self.process.poll() is not None:
                raise AssertionError(f"serve exited:\n{self.tail()}")
            try:
                return httpx.get(f"{self.url}/healthz", timeout=1).status_code in statuses
            except httpx.HTTPError:
                return False

        wait_until(up, timeout_s, f"serve at {self.url} answering\n{self.tail()}")


class Agent(Proc):
    """`costart agent` for ``nodes``: its token in the environment (never argv), its
    state in ``DIRECTORY/state/NODES`` (outside the work directory; a restart on the
    same nodes finds it)."""

    def __init__(
        self, directory: Path, urls: list[str], nodes: tuple[str, ...], restart: bool = False
    ) -> None:
        name = "+".join(nodes) + ("-restarted" if restart else "")
        self.state_dir = directory / "state" / "+".join(nodes)
        args = [
            sys.executable, "-m", "costart.cli.main",
            "agent",
            "--server", ",".join(urls),
            "--work-dir", str(directory / "work"),
            "--state-dir", str(self.state_dir),
            "--peer-host", "127.0.0.1",
            "--resync", "1",
            "--heartbeat", "2",
            "--failover", "30",
            "--accounts", str(write_accounts(directory)),
        ]  # fmt: skip
        if os.geteuid() == 0:
            args.append("--allow-root")  # the test's owners run as the agent's own account
        for node in nodes:
            args += ["--node", node]
        (directory / "work").mkdir(exist_ok=True)
        token = {"COSTART_AGENT_TOKEN": agent_token(nodes)}
        super().__init__(args, directory / f"agent-{name}.log", directory, env=token)

    def wait_running(self, timeout_s: float = 60) -> None:
        def running() -> bool:
            if self.process.poll() is not None:
                raise AssertionError(f"agent exited:\n{self.tail()}")
            return "agent running" in self.log.read_text()

        wait_until(running, timeout_s, f"agent {self.log.name} running")


class Cluster:
    """A server (and a standby), agents, and what the member programs recorded."""

    def __init__(self, directory: Path, agents: list[tuple[str, ...]], standby: bool = False):
        self.directory = directory
        self.starts = directory / "starts.jsonl"
        self.spawned_path = directory / "spawned.txt"
        self.agent_nodes = agents
        write_files(directory, agents)
        self.leader = Serve(directory, "serve-a")
        self.leader.wait_serving()
        self.standby = Serve(directory, "serve-b", standby=True) if standby else None
        self.urls = [self.leader.url] + ([self.standby.url] if self.standby else [])
        self.api = Client(self.urls, ADMIN, failover_s=30)
        self.agents = [Agent(directory, self.urls, nodes) for nodes in agents]
        for agent in self.agents:
            agent.wait_running()

    @property
    def work(self) -> Path:
        """The agents' work root: a run table's paths are relative to it."""
        return self.directory / "work"

    def in_work(self, tmp_path: Path) -> Path:
        """A directory of one test's own under the work root (its probes' files)."""
        path = self.work / tmp_path.name
        path.mkdir(parents=True, exist_ok=True)
        return path

    def restart_agent(self, index: int) -> Agent:
        """A new agent for the same nodes, on the same work and state directories."""
        agent = Agent(self.directory, self.urls, self.agent_nodes[index], restart=True)
        agent.wait_running()
        return agent

    def close(self) -> None:
        for agent in self.agents:
            agent.stop()
        for serve in (self.leader, self.standby):
            if serve is not None:
                serve.stop()
        self.api.close()

    def program(self, *args: str) -> list[str]:
        """The member program's argv: a shell that records the spawn (within a
        millisecond or so, so even a process killed at once is seen), then the program."""
        spawned, starts = str(self.spawned_path), str(self.starts)
        return ["/bin/sh", "-c", SPAWN, "sh", spawned, sys.executable, str(PROGRAM), starts, *args]

    def spawned(self, group_id: str) -> list[tuple[str, str, str]]:
        """Every spawn of the group's programs: (member, task, attempt)."""
        if not self.spawned_path.exists():
            return []
        rows = [line.split() for line in self.spawned_path.read_text().splitlines() if line]
        return [(r[1], r[2], r[3]) for r in rows if r[0] == group_id]

    def submit(self, spec: dict[str, Any]) -> str:
        """Submit; the group's id."""
        created = self.api.call("POST", "/v1/groups", dict[str, Any], json=spec)
        return str(created["id"])

    def group(self, name: str) -> dict[str, Any]:
        return self.api.call("GET", f"/v1/groups/{name}", dict[str, Any])

    def state(self, name: str) -> str:
        return str(self.group(name)["group"]["state"])

    def events(self, name: str) -> list[dict[str, Any]]:
        return self.api.call_list(f"/v1/groups/{name}/events", dict[str, Any])

    def log_events(self, name: str) -> list[dict[str, Any]]:
        """The group's events as the log holds them (every field, e.g. ``note``), read
        through the watch stream from the start up to its latest event."""
        last = self.events(name)[-1]["position"]
        found = []
        for event in self.api.watch(after=0, group=name):
            found.append({"type": event.type, "position": event.position, **event.event})
            if event.position >= last:
                return found
        raise AssertionError("the watch stream ended")

    def started(self, group_id: str | None = None) -> list[dict[str, Any]]:
        """Every start the member programs recorded (of one group)."""
        if not self.starts.exists():
            return []
        rows = [json.loads(line) for line in self.starts.read_text().splitlines() if line]
        return [r for r in rows if group_id is None or r["COSTART_GROUP_ID"] == group_id]

    def wait_state(self, name: str, states: set[str], timeout_s: float = 60) -> str:
        def reached() -> str | None:
            try:
                state = self.state(name)
            except ApiError:
                return None
            return state if state in states else None

        return wait_until(
            reached, timeout_s, lambda: f"group {name} in {sorted(states)}\n{self.logs()}"
        )

    def logs(self) -> str:
        parts = [f"--- {a.log.name}\n{a.tail()}" for a in self.agents]
        parts.append(f"--- {self.leader.log.name}\n{self.leader.tail()[-2000:]}")
        return "\n".join(parts)


def alive_of_group(group_id: str) -> list[int]:
    """Pids of live processes whose environment names the group (every process a task
    started inherits it), read from the process table."""
    marker = f"COSTART_GROUP_ID={group_id}".encode()
    found = []
    for pid in _pids():
        try:
            environ = Path(f"/proc/{pid}/environ").read_bytes()
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z" and marker in environ.split(b"\0"):
            found.append(pid)
    return found


def _pids() -> Iterator[int]:
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            yield int(entry.name)


def kill_group_leftovers(group_id: str) -> None:
    """Cleanup after a failed test: nothing of ours outlives it."""
    for pid in alive_of_group(group_id):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
