"""The API's hot path, ``POST /v1/groups``, without the framework's work per request.

Profiled under the benchmark's load (16 clients, ADR 0055), Litestar's handling of a
submit -- the request object, dependency injection, the signature model, the response
object and its conversion -- took about a fifth of `serve`'s CPU per submit, more than
parsing the spec. `submit_fast_path` is the submit route's middleware: once it sees an
ordinary request (a known bearer token, a ``Content-Length`` within the framework's body
limit) it reads the body, runs `run_submit` -- the very function the handler runs -- and
sends the success answer itself: the bytes the framework would send
(`tests/rest/test_submit_path.py` compares the two paths).

Everything else goes to the handler as it came: a missing or unknown token (the
handler's 401), a body without a length or over the limit (413), and so on. A submit
that fails is answered by the framework as well: the middleware hands the handler the
body it read and the error it got (`FAILED_KEY` in the scope's state), and the handler
raises that error instead of submitting again. So every error answer, and its status in
the request log, comes from the framework's exception handlers (`costart.rest.http_app`).
The token is still compared in constant time (`Tokens.user_for_header`).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Final, NamedTuple
from urllib.parse import quote

from litestar.exceptions import PermissionDeniedException
from litestar.serialization import encode_json
from litestar.types import ASGIApp, HTTPRequestEvent, Message, Receive, ReceiveMessage, Scope, Send

from costart.domain.actors import Actor
from costart.domain.errors import SpecError
from costart.domain.spec import parse_spec_warned
from costart.domain.spec_types import GroupSpec
from costart.rest.request_bodies import spec_format
from costart.rest.timed import TimedGroup, group_doc

if TYPE_CHECKING:
    from costart.rest.auth import Tokens, User
    from costart.service.controller_service import Service

FAILED_KEY: Final = "costart.submit_failed"
"""Where the fast path leaves a failed submit's error for the handler (scope state)."""
_JSON: Final = b"application/json"


class Submitted(NamedTuple):
    created: TimedGroup
    location: str
    warnings: list[str]
    """What the spec may still get wrong (`costart.domain.spec.parse_spec_warned`): sent as
    ``Warning: 299 - "..."`` headers, as Kubernetes sends admission warnings."""

    def headers(self) -> list[tuple[str, str]]:
        found = [("location", self.location)]
        for text in self.warnings:
            quoted = text.replace("\\", "\\\\").replace('"', '\\"')
            found.append(("warning", f'299 - "{quoted}"'))
        return found


async def run_submit(service: Service, user: User, data: bytes, content_type: str) -> Submitted:
    """Parse the spec, check that ``user`` may submit for its owner, submit it (batched
    with the submits in flight, answered once durable); the created group's doc and its
    URL. The spec parser (not the framework) validates the body, so every error names
    the spec field the way `costart validate` does; a ``Content-Type`` that is neither
    JSON nor TOML is 415 (`costart.rest.request_bodies`)."""
    fmt = spec_format(content_type)

    warnings: list[str] = []

    def checked() -> GroupSpec:
        try:
            spec, found = parse_spec_warned(data, fmt)
        except SpecError as error:
            raise with_type_hint(error, content_type) from None
        if not user.may_act_for(spec.owner):
            raise PermissionDeniedException(
                f"{user.name} may not submit groups owned by {spec.owner}"
            )
        warnings.extend(found)
        return spec

    row = await service.submit_batched(checked, Actor.user(user.name))
    created = group_doc(row, time.time_ns())
    return Submitted(created, f"/v1/groups/{quote(created.name, safe='')}", warnings)


TOML_HINT: Final = (
    "no Content-Type was sent, so the body was read as JSON; "
    "a TOML spec needs Content-Type: application/toml"
)


def with_type_hint(error: SpecError, content_type: str) -> SpecError:
    """``error`` with a hint when the body was read as JSON only because no
    ``Content-Type`` said otherwise (a TOML spec sent as is)."""
    if content_type.strip() or not error.reason.startswith("not valid JSON"):
        return error
    return SpecError(error.path, f"{error.reason} ({TOML_HINT})")


def _headers(scope: Scope) -> dict[bytes, bytes]:
    # ASGI header names are lowercase; a repeated header keeps its last value, which
    # only matters for requests this path hands on anyway (see `_ordinary`).
    return dict(scope["headers"])


def _ordinary(headers: dict[bytes, bytes], limit: int) -> int | None:
    """The body's length if the request is one this path serves: a plain
    ``Content-Length`` within ``limit`` and no transfer coding; else None."""
    if b"transfer-encoding" in headers:
        return None
    raw = headers.get(b"content-length")
    if raw is None or not raw.isdigit():
        return None
    length = int(raw)
    return length if length <= limit else None


async def _read_body(receive: Receive) -> bytes | None:
    """The whole body, or None if the client went away first."""
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return None  # http.disconnect
        chunks.append(message["body"])
        if not message.get("more_body", False):
            return b"".join(chunks)


def _replay(body: bytes, receive: Receive) -> Receive:
    """A ``receive`` that gives ``body`` once, then whatever the client sends."""
    sent = False

    async def replayed() -> ReceiveMessage:
        nonlocal sent
        if sent:
            return await receive()
        sent = True
        whole: HTTPRequestEvent = {"type": "http.request", "body": body, "more_body": False}
        return whole

    return replayed


def submit_fast_path(app: ASGIApp) -> ASGIApp:
    """The submit route's middleware (``app`` is the framework's handler)."""

    async def middleware(scope: Scope, receive: Receive, send: Send) -> None:
        litestar_app: Any = scope["litestar_app"]
        tokens: Tokens = litestar_app.state.tokens
        headers = _headers(scope)
        authorization = headers.get(b"authorization")
        user = (
            None
            if authorization is None
            else tokens.user_for_header(authorization.decode("latin-1"))
        )
        length = _ordinary(headers, litestar_app.request_max_body_size)
        if user is None or length is None:
            await app(scope, receive, send)
            return
        body = await _read_body(receive)
        if body is None:
            return  # nobody to answer
        content_type = headers.get(b"content-type", b"").decode("latin-1")
        try:
            submitted = await run_submit(litestar_app.state.service, user, body, content_type)
        except Exception as error:  # answered by the framework, as the handler's own
            scope.setdefault("state", {})[FAILED_KEY] = error
            await app(scope, _replay(body, receive), send)
            return
        payload = encode_json(submitted.created)
        start: Message = {
            "type": "http.response.start",
            "status": 201,
            "headers": [
                *((k.encode(), v.encode("latin-1")) for k, v in submitted.headers()),
                (b"content-type", _JSON),
                (b"content-length", str(len(payload)).encode()),
            ],
        }
        await send(start)
        await send({"type": "http.response.body", "body": payload, "more_body": False})

    return middleware


def failed_before(scope: Scope) -> BaseException | None:
    """The error the fast path got for this request's submit, if it got one."""
    state = scope.get("state")
    return None if state is None else state.get(FAILED_KEY)
