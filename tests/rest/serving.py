"""`costart serve` as a real process for the REST tests: a free port on 127.0.0.1, a
temporary store, the given tokens file and options; every wait is a bounded poll."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[2]
DEADLINE_S = 30


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
) -> Iterator[tuple[str, Path, dict[str, str]]]:
    """(url, stderr log path, environment) of a running server; stopped on exit."""
    tokens_file = tmp / "tokens.toml"
    tokens_file.write_text(tokens)
    port = free_port()
    env = env if env is not None else serve_env(tmp)
    log_path = tmp / f"serve-{port}.stderr"
    with log_path.open("w") as stderr:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "costart.cli.main",
                "--store",
                str(tmp / "store"),
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
        url = f"{scheme}://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + DEADLINE_S
            while True:
                try:
                    if httpx.get(f"{url}/healthz", timeout=1, verify=verify).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(log_path.read_text())
                time.sleep(0.1)
            yield url, log_path, env
        finally:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
