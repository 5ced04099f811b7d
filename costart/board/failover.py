"""Where an open board goes when its server is gone (ADR 0117).

`serve --peer URL` names the other servers of the same store (a leader and its
standbys) as a browser reaches them. The page carries them (``data-peers``); when its
stream drops and its own server does not answer as a leader, it asks each peer's
``GET /board/leader`` and loads the same page from the first that leads. The question
is a simple cross-origin GET without credentials: the leader answers it with
``Access-Control-Allow-Origin`` for its own peers only, a standby (every answer 503,
`costart.rest.not_leader`) or a dead server cannot be read, so the page never moves to
a server that is not leading. The page's Content-Security-Policy lets it connect to
the peers and nowhere else.

The session moves with the page when the browser sends the cookie there (the same host
on another port: cookies are kept per host, and ``SameSite`` ignores the port). On
another host the cookie cannot follow: the leader shows its login form, which comes
back to the same page (`safe_next`) once the user gives the token again. Nothing lets
one origin hand a credential to another (ADR 0100's cookie stays the only one).
"""

from __future__ import annotations

import re
from typing import Any, Final

from litestar import Request, Response, get
from litestar.datastructures import State

from costart.domain.spec import is_name

NEXT_PAGE: Final = re.compile(
    r"/(?:groups/(?P<group>[^/?#]{1,253}))?(?:\?[A-Za-z0-9=&%._-]{0,512})?"
)
"""A page the login form may come back to: the groups table or a group's page, with
its query (filters, the position the page had seen); nothing else (no open redirect)."""


def board_peers(request: Request[Any, Any, State]) -> tuple[str, ...]:
    """The other servers' origins this server was given (`serve --peer`)."""
    peers: tuple[str, ...] = request.app.state.get("board_peers", ())
    return peers


def connect_src(peers: tuple[str, ...]) -> str:
    """The Content-Security-Policy directive that lets a page ask ``peers`` who leads."""
    return "connect-src 'self' " + " ".join(peers)


def safe_next(page: str) -> str:
    """``page`` if the login form may come back to it, else ``/``."""
    match = NEXT_PAGE.fullmatch(page)
    if match is None or (match["group"] is not None and not is_name(match["group"])):
        return "/"
    return page


@get("/board/leader", include_in_schema=False)
async def leader(request: Request[Any, Any, State]) -> Response[dict[str, bool]]:
    """This server leads (a standby answers 503 before it reaches any route). Readable
    from a peer's page: the answer names no user and needs no session."""
    headers = {"Cache-Control": "no-store", "Vary": "Origin"}
    origin = request.headers.get("origin")
    if origin is not None and origin in board_peers(request):
        headers["Access-Control-Allow-Origin"] = origin
    return Response({"leading": True}, headers=headers)


LEADER_ROUTES = [leader]
