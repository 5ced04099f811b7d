"""A host program that runs the service from `costart.server`, without the command
line: ``python -m tests.server.host_program STORE PORT``.

It opens the server on an LMDB store, serves in a thread, waits for ``/healthz`` to
answer, stops the server, and prints one JSON line: the health answer's status, what
`Server.run` returned, whether a second server could lead the store afterwards (the
lease was handed over), and whether typer was ever imported."""

from __future__ import annotations

import json
import sys
import threading
import time
from pathlib import Path

import httpx

from costart.bootstrap import Settings
from costart.rest.auth import Tokens
from costart.server import ServeOptions
from costart.server.runtime import Server

DEADLINE_S = 30
POLL_S = 0.02


def main(store: Path, port: int) -> dict[str, object]:
    settings = Settings(store=str(store))
    options = ServeOptions(host="127.0.0.1", port=port, lease_duration_s=5.0)
    server = Server.open(settings, options, Tokens({}))
    outcome: list[str | None] = []
    thread = threading.Thread(target=lambda: outcome.append(server.run()), name="serve")
    thread.start()
    try:
        deadline = time.monotonic() + DEADLINE_S
        while True:
            try:
                health = httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1)
                break
            except httpx.HTTPError:
                if time.monotonic() > deadline or not thread.is_alive():
                    raise
                time.sleep(POLL_S)
    finally:
        server.stop()
        thread.join(DEADLINE_S)
    successor = Server.open(settings, options, Tokens({}))  # the lease was given back
    successor.stop()  # before it runs: `run` serves nothing and hands over at once
    successor_run = successor.run()
    return {
        "health": health.status_code,
        "stopped": not thread.is_alive(),
        "run": outcome,
        "successor_epoch": successor.controller.epoch,
        "successor_run": successor_run,
        "typer": "typer" in sys.modules,
    }


if __name__ == "__main__":
    print(json.dumps(main(Path(sys.argv[1]), int(sys.argv[2]))))
