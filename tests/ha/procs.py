"""Real `costart serve` processes for the HA tests and the failover benchmark.

Each server logs JSON lines to its own stderr file; `ServeProcess.wait_for` polls that
file for an event (bounded). Everything binds 127.0.0.1 on a free port.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

from tests import child_processes

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "ha-token-0123456789abcdef"
START_DEADLINE_S = 20.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def child_env() -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("PERSISTENCE_MODULE", None)  # --store selects the LMDB store
    return env


def write_tokens(directory: Path) -> Path:
    path = directory / "tokens.toml"
    path.write_text(f'[tokens.{TOKEN}]\nuser = "alice"\nrole = "admin"\n')
    return path


def group_spec(name: str, tasks: int = 1, gpu: int = 1) -> dict[str, Any]:
    member = {"name": "trainer", "kind": "job", "tasks": tasks, "shape": {"gpu": gpu}}
    return {"name": name, "owner": "alice", "members": [member]}


class ServeProcess:
    """One `costart serve` (leader or ``--standby``) on a shared store directory."""

    def __init__(
        self, store: Path, logs: Path, *, standby: bool, lease_s: float, name: str
    ) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.stderr_path = logs / f"{name}.stderr"
        self._stderr = self.stderr_path.open("w")
        args = [
            sys.executable,
            "-m",
            "costart.cli.main",
            "--store",
            str(store),
            "serve",
            "--tokens",
            str(write_tokens(logs)),
            "--port",
            str(self.port),
            "--interval",
            "0.1",
            "--simulate-claims",
            "--claim-delay",
            "0.2",
            "--placement",
            "tests.rest.fake_placement:factory",
            "--lease-duration",
            str(lease_s),
        ]
        if standby:
            args.append("--standby")
        self.process = child_processes.popen(
            args,
            env=child_env(),
            cwd=logs,
            stdout=subprocess.DEVNULL,
            stderr=self._stderr,
        )

    def events(self) -> list[dict[str, Any]]:
        found = []
        for line in self.stderr_path.read_text().splitlines():
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            if isinstance(entry, dict):
                found.append(entry)
        return found

    def find(self, event: str) -> dict[str, Any] | None:
        return next((e for e in self.events() if e.get("event") == event), None)

    def wait_for(self, event: str, timeout_s: float) -> dict[str, Any]:
        deadline = time.monotonic() + timeout_s
        while True:
            found = self.find(event)
            if found is not None:
                return found
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(
                    f"no {event!r} within {timeout_s}s:\n{self.stderr_path.read_text()[-3000:]}"
                )
            time.sleep(0.02)

    def wait_serving(self, timeout_s: float = START_DEADLINE_S) -> None:
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                if httpx.get(f"{self.url}/healthz", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"not serving:\n{self.stderr_path.read_text()[-3000:]}")
            time.sleep(0.05)

    def signal(self, sig: signal.Signals) -> None:
        self.process.send_signal(sig)

    def stop(self, timeout_s: float = 15) -> int:
        """SIGTERM (graceful: snapshot, release the lease) and wait; the exit code."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGCONT)
            self.process.terminate()
        try:
            return self.process.wait(timeout=timeout_s)
        finally:
            self.close()

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)
        self._stderr.close()


def client(url: str) -> httpx.Client:
    return httpx.Client(base_url=url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=10)


def submit(url: str, name: str) -> int:
    """POST a group; the status code (0 when the server cannot be reached)."""
    try:
        with client(url) as c:
            return c.post("/v1/groups", json=group_spec(name)).status_code
    except httpx.HTTPError:
        return 0


def submit_until_accepted(url: str, name: str, timeout_s: float) -> float:
    """Retry a submit until it is acknowledged (201); seconds it took."""
    started = time.monotonic()
    while time.monotonic() - started < timeout_s:
        if submit(url, name) == 201:
            return time.monotonic() - started
        time.sleep(0.01)
    raise AssertionError(f"{name} not accepted by {url} within {timeout_s}s")
