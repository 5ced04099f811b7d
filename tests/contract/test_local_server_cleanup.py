"""A throwaway PostgreSQL server dies with the process that started it, even when that
process is killed outright (SIGKILL: no `finally`, no atexit)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from tests import child_processes

ROOT = Path(__file__).resolve().parents[2]
GONE_WITHIN_S = 60.0
STARTER = (
    "import time\n"
    "from costart.pgstore.local_server import LocalServer\n"
    "server = LocalServer().start()\n"
    "print(server.port, server.root, flush=True)\n"
    "time.sleep(600)\n"
)


def accepts(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(1.0)
        return s.connect_ex(("127.0.0.1", port)) == 0


def test_a_killed_starter_leaves_no_server_and_no_data_directory():
    starter = child_processes.popen(
        [sys.executable, "-c", STARTER], cwd=ROOT, stdout=subprocess.PIPE, text=True
    )
    assert starter.stdout is not None
    port_text, root = starter.stdout.readline().split()
    port = int(port_text)
    assert accepts(port) and Path(root).is_dir()
    os.kill(starter.pid, signal.SIGKILL)
    starter.wait()
    deadline = time.monotonic() + GONE_WITHIN_S
    while (accepts(port) or Path(root).exists()) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not accepts(port), f"the server on port {port} outlived its starter"
    assert not Path(root).exists(), f"{root} outlived its starter"
