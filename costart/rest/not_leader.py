"""What a standby serves while it waits for the lease: every request is answered 503
"not leader", with the leader's address when the leader published one, so clients
follow it instead of finding the port closed (`costart.rest.client` does)."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Final

import msgspec

from costart.rest.problems import NOT_LEADER, PROBLEM_JSON, ProblemDetails, problem

LEADER_FILE: Final = "leader.url"


class NotLeaderBody(ProblemDetails, frozen=True):
    leader: str | None = None


def publish_leader(store: Path, url: str) -> None:
    """Write the leader's advertised URL beside its store, atomically (rename)."""
    fd, temp = tempfile.mkstemp(dir=store, prefix=".leader-")
    with os.fdopen(fd, "w") as out:
        out.write(url + "\n")
    os.replace(temp, store / LEADER_FILE)


def read_leader(store: Path) -> str | None:
    try:
        text = (store / LEADER_FILE).read_text().strip()
    except OSError:
        return None
    return text or None


def not_leader_app(leader: Callable[[], str | None]) -> object:
    """A bare ASGI app: 503 with `NotLeaderBody` for every HTTP request."""

    async def app(scope: dict[str, object], receive: object, send: object) -> None:
        if scope["type"] != "http":
            return
        said = problem(503, "not leader: this server is a standby", kind=NOT_LEADER)
        body = msgspec.json.encode(NotLeaderBody(**msgspec.structs.asdict(said), leader=leader()))
        await send(  # type: ignore[operator]
            {
                "type": "http.response.start",
                "status": 503,
                "headers": [
                    (b"content-type", PROBLEM_JSON.encode()),
                    (b"retry-after", b"1"),
                    (b"content-length", str(len(body)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})  # type: ignore[operator]

    return app
