"""A real `costart serve` whose store meets a full disk (``RLIMIT_FSIZE``: the kernel
refuses its writes past a size, as a full disk refuses them, as root or not): the submit
that could not be written is answered 507 "out of space" (a problem document), and the
server stops with the documented exit code 9 in one line naming the store."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from costart.cli.exits import EXIT_NO_SPACE
from tests import child_processes
from tests.rest.serving import DEADLINE_S, POLL_S, free_port, serve_env

TOKEN = "alice-token-0123456789"
LIMIT_BYTES = 384 * 4096
"""Page-aligned, as a disk fills by whole blocks; a limit inside a page (the second
case) makes LMDB see a short write, EIO, not EFBIG, as a run of pages that meets the end
of a disk part of the way through does: both are "out of space"."""


def _spec(i: int) -> dict[str, object]:
    members = [
        {"name": f"m{j}", "kind": "job", "tasks": 8, "shape": {"gpu": 1}, "claims": ["gpus"]}
        for j in range(20)
    ]
    return {"name": f"g-{i:05d}", "owner": "alice", "members": members}


@pytest.mark.parametrize("limit", [LIMIT_BYTES, LIMIT_BYTES + 100], ids=["page", "short-write"])
def test_a_full_disk_is_507_out_of_space_and_serve_exits_9(tmp_path: Path, limit: int):
    tokens = tmp_path / "tokens.toml"
    tokens.write_text(f'[tokens.{TOKEN}]\nuser = "alice"\n')
    port = free_port()
    env = {**serve_env(tmp_path, lmdb=True), "COSTART_LMDB_HEADROOM": "0"}
    args = [sys.executable, "-m", "tests.server.file_size_limited", str(limit)]
    args += ["--store", str(tmp_path / "store"), "serve", "--tokens", str(tokens)]
    args += ["--port", str(port), "--interval", "60"]
    stderr_path = tmp_path / "serve.stderr"
    with stderr_path.open("w") as stderr:
        process = child_processes.popen(
            args, env=env, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=stderr
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + DEADLINE_S
        while True:
            try:
                if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert process.poll() is None, stderr_path.read_text()
            assert time.monotonic() < deadline, stderr_path.read_text()
            time.sleep(POLL_S)
        headers = {"Authorization": f"Bearer {TOKEN}"}
        answer = None
        with httpx.Client(base_url=url, headers=headers, timeout=10) as client:
            for i in range(2000):
                try:
                    answer = client.post("/v1/groups", json=_spec(i))
                except httpx.HTTPError:
                    break  # the server stopped between two submits
                if answer.status_code != 201:
                    break
        assert answer is not None and answer.status_code == 507, answer and answer.text
        assert answer.headers["content-type"] == "application/problem+json"
        body = answer.json()
        assert body["type"] == "urn:costart:problem:out-of-space"
        assert body["detail"].startswith("out of space:") and "is out of space" in body["detail"]
        assert process.wait(timeout=DEADLINE_S) == EXIT_NO_SPACE
        lines = stderr_path.read_text().splitlines()
        last = lines[-1]
        assert last.startswith("error: ") and "is out of space" in last, lines[-5:]
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
