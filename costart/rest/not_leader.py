"""What a standby serves while it waits for the lease: every request is answered 503
"not leader", with the leader's address when the leader published one, so clients
follow it instead of finding the port closed (`costart.rest.client` does). A browser
opening a board page here gets the same answer as a short page linking the leader's
board (ADR 0117)."""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Callable
from html import escape
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


BOARD_PAGE: Final = re.compile(r"/|/groups/[A-Za-z0-9._-]{1,253}")
"""The board's pages (`costart.board`): a browser asking for one here is shown a page."""


def _board_page(leader: str | None, path: str) -> bytes:
    """The standby's answer to a browser: where the board is (the same page on the
    leader), or that no leader is known yet. No script, nothing loaded."""
    if leader:
        target = escape(leader.rstrip("/") + path)
        where = f'The board is on the leader: <a id="leader" href="{target}">{target}</a>.'
    else:
        where = "No leader is known yet: try again in a moment."
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        "<title>standby · costart</title></head><body><h1>This server is a standby</h1>"
        f"<p>It takes over when the leader's lease expires. {where}</p></body></html>"
    ).encode()


def _wants_page(scope: dict[str, object]) -> bool:
    headers = dict(scope.get("headers") or ())  # type: ignore[call-overload]
    accept = headers.get(b"accept", b"").decode("latin-1")
    path = str(scope.get("path", ""))
    return (
        scope.get("method") == "GET" and "text/html" in accept and bool(BOARD_PAGE.fullmatch(path))
    )


def not_leader_app(leader: Callable[[], str | None]) -> object:
    """A bare ASGI app: 503 with `NotLeaderBody` for every HTTP request (a short page
    for a browser asking for a board page)."""

    async def app(scope: dict[str, object], receive: object, send: object) -> None:
        if scope["type"] != "http":
            return
        headers: list[tuple[bytes, bytes]] = [(b"retry-after", b"1")]
        if _wants_page(scope):
            body = _board_page(leader(), str(scope["path"]))
            headers += [
                (b"content-type", b"text/html; charset=utf-8"),
                (b"content-security-policy", b"default-src 'none'"),
                (b"cache-control", b"no-store"),
            ]
        else:
            said = problem(503, "not leader: this server is a standby", kind=NOT_LEADER)
            body = msgspec.json.encode(
                NotLeaderBody(**msgspec.structs.asdict(said), leader=leader())
            )
            headers.append((b"content-type", PROBLEM_JSON.encode()))
        headers.append((b"content-length", str(len(body)).encode()))
        await send(  # type: ignore[operator]
            {"type": "http.response.start", "status": 503, "headers": headers}
        )
        await send({"type": "http.response.body", "body": body})  # type: ignore[operator]

    return app
