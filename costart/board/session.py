"""The board's browser session: the API's token, kept in a cookie the page's script
cannot read (HttpOnly) and the browser sends to this site only (SameSite=Strict).

``EventSource`` sends no Authorization header, so the cookie is how the live stream is
authenticated. Writes that a cookie authenticates must also come from this site: their
``Origin`` must be the server's own, and they carry the session's CSRF token (an HMAC
of the token, so it survives a restart of ``serve`` with the tokens file and is useless
without the token). Who may do what is the API's `User.may_act_for`.
"""

from __future__ import annotations

import hashlib
import hmac
from typing import Final

from litestar import Request
from litestar.datastructures import State
from litestar.exceptions import NotAuthorizedException, PermissionDeniedException

from costart.rest.auth import Tokens, User

COOKIE: Final = "costart_session"
CSRF_HEADER: Final = "x-csrf-token"
_CSRF_CONTEXT: Final = b"costart board csrf v1"


def csrf_token(token: str) -> str:
    """The CSRF token of the session holding ``token`` (not the token, not derivable
    from it without the token)."""
    return hmac.new(token.encode(), _CSRF_CONTEXT, hashlib.sha256).hexdigest()


def session_user(request: Request[object, object, State]) -> User | None:
    """The user whose token the session cookie holds, or None (no cookie, unknown or
    since revoked token)."""
    token = request.cookies.get(COOKIE)
    if not token:
        return None
    tokens: Tokens = request.app.state.tokens
    return tokens.user_for_token(token)


def require_user(request: Request[object, object, State]) -> User:
    """The session's user; 401 without a valid session."""
    user = session_user(request)
    if user is None:
        raise NotAuthorizedException("no board session: log in with a token")
    return user


def own_origin(request: Request[object, object, State]) -> str:
    """This server's origin as the browser names it (scheme and the Host it used)."""
    host = request.headers.get("host", "")
    return f"{request.url.scheme}://{host}"


def check_write(request: Request[object, object, State], csrf: str | None) -> User:
    """The user of a cookie-authenticated write: 401 without a session, 403 unless the
    request comes from this site (``Origin``) with the session's CSRF token."""
    user = require_user(request)
    origin = request.headers.get("origin")
    if origin is None or not hmac.compare_digest(origin, own_origin(request)):
        raise PermissionDeniedException(f"cross-site request refused (Origin {origin!r})")
    token = request.cookies.get(COOKIE, "")
    if csrf is None or not hmac.compare_digest(csrf, csrf_token(token)):
        raise PermissionDeniedException("missing or wrong CSRF token")
    return user
