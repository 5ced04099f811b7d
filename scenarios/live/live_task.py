"""What every program of the live RL scenario shares (standard library only, so any
``python3`` runs it): its identity as the node agent gives it, the record of its start,
a small HTTP server, and the rendezvous with its peers after the start.

The agent passes each task its identity and its peers in ``COSTART_*`` variables; the
scenario's own settings come from the spec's ``run.env``. ``LIVE_STARTS_DIR`` (when set)
is where each program records its start: one JSON file per process, written before it
does anything else, so a test can compare every start with the log's
``BarrierReleased``.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

Answer = Callable[[str], dict[str, Any]]


@dataclass(frozen=True)
class Identity:
    """Who this process is: the agent's ``COSTART_*`` variables."""

    group: str
    member: str
    task: int
    attempt: int
    node: str
    port: int | None
    peers: dict[str, list[str]]  # member -> "host:port" of each of its tasks, by index

    @property
    def name(self) -> str:
        return f"{self.member}-{self.task}"


def identity(environ: dict[str, str] | None = None) -> Identity:
    """This task's identity; a clear exit when a variable the agent sets is missing."""
    env = dict(os.environ if environ is None else environ)
    try:
        port = env.get("COSTART_PORT")
        return Identity(
            group=env["COSTART_GROUP"],
            member=env["COSTART_MEMBER"],
            task=int(env["COSTART_TASK"]),
            attempt=int(env["COSTART_ATTEMPT"]),
            node=env["COSTART_NODE"],
            port=int(port) if port else None,
            peers=parse_peers(env.get("COSTART_PEERS", "")),
        )
    except (KeyError, ValueError) as error:
        sys.exit(f"not started by a costart agent (bad or missing {error})")


def parse_peers(text: str) -> dict[str, list[str]]:
    """``COSTART_PEERS``: JSON, member name -> the address of each of its tasks."""
    if not text:
        return {}
    peers = json.loads(text)
    return {str(member): [str(a) for a in addresses] for member, addresses in peers.items()}


def record_start(me: Identity) -> None:
    """One file per process under ``$LIVE_STARTS_DIR``, written atomically."""
    folder = os.environ.get("LIVE_STARTS_DIR")
    if not folder:
        return
    record = {
        "group": me.group,
        "member": me.member,
        "task": me.task,
        "attempt": me.attempt,
        "node": me.node,
        "pid": os.getpid(),
        "started_ns": time.time_ns(),
    }
    path = Path(folder) / f"{me.member}.{me.task}.attempt-{me.attempt}.{os.getpid()}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".part")
    partial.write_text(json.dumps(record, sort_keys=True) + "\n")
    os.replace(partial, path)


def say(me: Identity, text: str) -> None:
    """One line of output (the agent keeps it in the task's log file)."""
    print(f"{me.name} (attempt {me.attempt}, {me.node}): {text}", flush=True)


def setting(name: str, default: float) -> float:
    """A number from the spec's ``run.env``."""
    value = os.environ.get(name)
    return float(value) if value else default


def serve_forever(me: Identity, answer: Answer) -> None:
    """Serve ``GET /healthz`` and ``GET /<anything>`` (JSON from ``answer(path)``) on
    127.0.0.1 at this task's port until SIGTERM, then exit 0."""
    if me.port is None:
        sys.exit("no COSTART_PORT: the member's run table needs a port")

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = json.dumps({"ok": True} if self.path == "/healthz" else answer(self.path))
            data = body.encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            return  # one line per request would drown the task's log

    server = ThreadingHTTPServer(("127.0.0.1", me.port), Handler)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    say(me, f"serving on 127.0.0.1:{me.port}")
    stop.wait()
    server.shutdown()
    say(me, "stopped (SIGTERM)")


def get_json(address: str, path: str, timeout_s: float = 2.0) -> dict[str, Any] | None:
    """``GET http://ADDRESS/PATH`` as JSON, or None when it does not answer 200."""
    try:
        with urllib.request.urlopen(f"http://{address}{path}", timeout=timeout_s) as answer:
            return dict(json.loads(answer.read()))
    except (OSError, urllib.error.URLError, ValueError):
        return None


def rendezvous(me: Identity, addresses: list[str], deadline_s: float) -> bool:
    """Wait until every address answers ``/healthz`` (the application's own readiness,
    after the start), polling, for at most ``deadline_s`` seconds."""
    waiting = list(addresses)
    until = time.monotonic() + deadline_s
    while waiting:
        waiting = [a for a in waiting if get_json(a, "/healthz", 1.0) is None]
        if not waiting:
            break
        if time.monotonic() > until:
            say(me, f"rendezvous failed: no answer from {', '.join(waiting)}")
            return False
        time.sleep(0.2)
    say(me, f"rendezvous: {len(addresses)} peers answer")
    return True
