"""`costart serve` as a real process for the REST tests: a free port on 127.0.0.1, a
temporary store, the given tokens file and options; every wait is a bounded poll."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from tests import child_processes

ROOT = Path(__file__).resolve().parents[2]
DEADLINE_S = 30
# How often a wait looks again: each look is one cheap request, and a test waits about
# half this per wait beyond the event itself (many waits per module).
POLL_S = 0.02


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def serve_env(tmp: Path, lmdb: bool = False) -> dict[str, str]:
    """The server's environment: ``--store`` selects LMDB when ``lmdb``, else SQLite."""
    if lmdb:
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        env.pop("PERSISTENCE_MODULE", None)
        return env
    return {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "PERSISTENCE_MODULE": "eventsourcing.sqlite",
        "SQLITE_DBNAME": str(tmp / "events.sqlite"),
    }


@contextmanager
def serving(
    tmp: Path,
    tokens: str,
    *options: str,
    env: dict[str, str] | None = None,
    scheme: str = "http",
    verify: object = True,
    store: Path | None = None,
    ready_status: int = 200,
    processes: list[subprocess.Popen[bytes]] | None = None,
) -> Iterator[tuple[str, Path, dict[str, str]]]:
    """(url, stderr log path, environment) of a running server; stopped on exit.
    ``store``: another server's store (a standby, answering ``ready_status`` 503 until
    it leads); ``processes`` receives the process (to kill it)."""
    port = free_port()
    env = env if env is not None else serve_env(tmp)
    log_path = tmp / f"serve-{port}.stderr"
    tokens_file = tmp / f"tokens-{port}.toml"
    tokens_file.write_text(tokens)
    with log_path.open("w") as stderr:
        process = child_processes.popen(
            [
                sys.executable,
                "-m",
                "costart.cli.main",
                "--store",
                str(store or tmp / "store"),
                "serve",
                "--tokens",
                str(tokens_file),
                "--port",
                str(port),
                *options,
            ],
            env=env,
            cwd=tmp,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
        )
        if processes is not None:
            processes.append(process)
        url = f"{scheme}://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + DEADLINE_S
            while True:
                try:
                    answer = httpx.get(f"{url}/healthz", timeout=1, verify=verify)
                    if answer.status_code == ready_status:
                        break
                except httpx.HTTPError:
                    pass
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(log_path.read_text())
                time.sleep(POLL_S)
            yield url, log_path, env
        finally:
            process.send_signal(signal.SIGCONT)
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
