"""The Litestar application: routes, auth dependency, error mapping, request logs.

Errors are RFC 9457 problem documents (`costart.rest.problems`), 401s with a
``WWW-Authenticate`` challenge. A bad spec is 422 naming the field (the
`SpecError` path); a body Litestar cannot read is 400; a body over the size limit is 413;
a body of a type the route does not read is 415 (`costart.rest.request_bodies`); nothing
a client sends should produce a 500.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import Any, Final
from urllib.parse import unquote

from litestar import Litestar, Request, Response
from litestar.datastructures import State
from litestar.di import Provide
from litestar.enums import ScopeType
from litestar.exceptions import HTTPException, ValidationException
from litestar.handlers import HTTPRouteHandler
from litestar.openapi import OpenAPIConfig
from litestar.openapi.plugins import JsonRenderPlugin
from litestar.openapi.spec import Components
from litestar.types import ASGIApp, Message, Receive, Scope, Send

from costart.domain.errors import Conflict, DomainError, IllegalTransition, NotFound, SpecError
from costart.domain.limits import MAX_SPEC_BYTES
from costart.domain.spec import is_name
from costart.log_writer import ControllerStoppedError
from costart.logging_setup import library_logger
from costart.projections import ViewDamagedError
from costart.rest.auth import Tokens
from costart.rest.dispatch_routes import DISPATCH_ROUTES
from costart.rest.docs_page import OfflineDocsPlugin
from costart.rest.estimate_routes import ESTIMATE_ROUTES
from costart.rest.log_routes import LOG_ROUTES
from costart.rest.metrics import registry_for
from costart.rest.openapi import BEARER, SECURITY_SCHEMES
from costart.rest.options import options_handlers
from costart.rest.problems import (
    CONTROLLER_STOPPED,
    PROBLEM_JSON,
    REALM,
    VIEWS_BEHIND,
    VIEWS_DAMAGED,
    Kind,
    ProblemDetails,
    problem,
)
from costart.rest.request_bodies import JsonBodyRequest
from costart.rest.routes import ROUTES, authenticate
from costart.rest.watch import WatchHub
from costart.rest.watch_routes import WATCH_ROUTES
from costart.service.controller_service import Service
from costart.service.log_follower import ViewsBehindError
from costart.service.log_relay import LogRelay

log = library_logger("costart.rest")
MAX_BODY_BYTES: Final = 2 * MAX_SPEC_BYTES
GROUPS_PREFIX: Final = b"/v1/groups/"


def _error(
    status: int,
    message: str,
    field: str | None = None,
    headers: dict[str, str] | None = None,
    kind: Kind | None = None,
) -> Response[ProblemDetails]:
    return Response(
        problem(status, message, field, kind),
        status_code=status,
        headers=headers,
        media_type=PROBLEM_JSON,
    )


def _domain_error(_: Request[Any, Any, Any], error: Exception) -> Response[ProblemDetails]:
    if isinstance(error, SpecError):
        return _error(422, str(error), error.path or None)
    if isinstance(error, NotFound):
        return _error(404, str(error))
    if isinstance(error, Conflict | IllegalTransition):
        return _error(409, str(error))
    return _error(400, str(error))


def _views_damaged(_: Request[Any, Any, Any], error: Exception) -> Response[ProblemDetails]:
    # Never a wrong row: the damaged view is named; restarting rebuilds or falls back.
    log.error("views damaged", error=str(error))
    return _error(503, f"the views are damaged: {error}", kind=VIEWS_DAMAGED)


def _views_behind(_: Request[Any, Any, Any], error: Exception) -> Response[ProblemDetails]:
    # The read would miss what it must see: said, never answered from short views.
    log.error("views behind", error=str(error))
    return _error(503, str(error), kind=VIEWS_BEHIND)


def _stopped(_: Request[Any, Any, Any], error: Exception) -> Response[ProblemDetails]:
    # A fenced or failed controller: this server no longer leads; clients retry elsewhere.
    # A full disk is said as such (507): retrying elsewhere does not help, space does.
    if isinstance(error, ControllerStoppedError) and error.out_of_space:
        return _error(507, f"out of space: {error}")
    return _error(503, f"this controller stopped: {error}", kind=CONTROLLER_STOPPED)


def _bad_group_segment(request: Request[Any, Any, Any]) -> str | None:
    """The group name of a ``/v1/groups/NAME...`` request when it is not a name: a quoted
    ``/`` in it made the router find no route (the handlers refuse the other bad names)."""
    raw = request.scope.get("raw_path") or b""
    if not raw.startswith(GROUPS_PREFIX):
        return None
    name = unquote(raw[len(GROUPS_PREFIX) :].split(b"/", 1)[0].decode("latin-1"))
    return None if is_name(name) else name


def _http_error(request: Request[Any, Any, Any], error: Exception) -> Response[ProblemDetails]:
    assert isinstance(error, HTTPException)
    if error.status_code == 404:
        bad = _bad_group_segment(request)
        if bad is not None:
            return _error(400, f"bad group name {bad!r}: not a valid group name")
    message = str(error.detail)
    field = None
    if isinstance(error, ValidationException) and isinstance(error.extra, list):
        # Name the parameter at fault as the client spells it, not the handler's name.
        items = [item for item in error.extra if isinstance(item, dict)]
        fields = "; ".join(
            _path_name_error(request, item)
            or _missing_body(item)
            or f"{_public_name(request, item)}: {item.get('message')}"
            for item in items
        )
        message = f"invalid request: {fields}" if fields else message
        field = _public_name(request, items[0]) if len(items) == 1 else None
    # The framework's own headers stay (a 405's Allow lists the methods the path takes).
    headers = {str(k): str(v) for k, v in (error.headers or {}).items()}
    if error.status_code == 401:
        headers["WWW-Authenticate"] = _challenge(request)
    return _error(error.status_code, message, field, headers=headers or None)


def _challenge(request: Request[Any, Any, Any]) -> str:
    """RFC 6750's challenge: the scheme and realm; ``invalid_token`` when one was sent."""
    sent = request.headers.get("authorization", "").lower().startswith("bearer ")
    return f'{REALM}, error="invalid_token"' if sent else REALM


def _public_name(request: Request[Any, Any, Any], item: dict[str, Any]) -> str:
    """The name a request parameter has on the wire (``continue``), for the handler's
    argument the framework names (``continue_token``)."""
    key = str(item.get("key"))
    try:
        parameters = request.route_handler.parsed_fn_signature.parameters
    except AttributeError:  # no handler resolved
        return key
    found = parameters.get(key)
    definition = getattr(found, "kwarg_definition", None)
    alias = (
        getattr(definition, "query", None)
        or getattr(definition, "header", None)
        or getattr(definition, "name", None)  # `costart.rest.paging`'s query parameters
    )
    return str(alias) if alias else key


_PATH_NOUNS: Final = {"name": "group", "member": "member", "claim": "claim", "node": "node"}


def _path_name_error(request: Request[Any, Any, Any], item: dict[str, Any]) -> str | None:
    """``bad group name 'X': not a valid group name`` for a path name the pattern refused."""
    key = str(item.get("key"))
    noun = _PATH_NOUNS.get(key)
    if item.get("source") != "path" or noun is None:
        return None
    value = request.scope.get("path_params", {}).get(key)
    return f"bad {noun} name {value!r}: not a valid {noun} name"


def _missing_body(item: dict[str, Any]) -> str | None:
    """``the request needs a JSON body`` for a route's ``data`` sent no body: the
    framework reports it as its own lookup of the argument (message ``'data'``)."""
    said = (item.get("source"), item.get("key"), item.get("message"))
    return "the request needs a JSON body" if said == ("body", "data", "'data'") else None


def _internal_error(request: Request[Any, Any, Any], error: Exception) -> Response[ProblemDetails]:
    log.exception("request failed", path=request.url.path)
    return _error(500, "internal error")


def request_log(app: ASGIApp) -> ASGIApp:
    """One structured log line per request: method, path, status, duration."""

    async def middleware(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != ScopeType.HTTP:
            await app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500

        async def send_and_note(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await app(scope, receive, send_and_note)
        finally:
            log.info(
                "request",
                method=scope.get("method"),
                path=scope.get("path"),
                status=status,
                duration_ms=round((time.perf_counter() - started) * 1000, 3),
            )

    return middleware


def _attach_watch(app: Litestar) -> None:
    """The watch hub hands frames to watchers in the server's event loop."""
    hub: WatchHub = app.state.watch
    hub.attach(asyncio.get_running_loop())


def create_app(
    service: Service,
    tokens: Tokens,
    watch: WatchHub,
    pages: Sequence[HTTPRouteHandler] = (),
) -> Litestar:
    """The REST API of one `Service`, whose change feed is ``watch`` (the service keeps
    it up with the log; ``GET /v1/watch`` streams it). OpenAPI at ``/schema/openapi.json``.
    ``pages``: more handlers served beside the API (the board, `costart.board`)."""
    if service.watch is not watch:
        raise ValueError("the watch hub must be the service's change feed")
    registry, session_timer = registry_for(lambda: service.views)
    service.session_observer = session_timer.observe
    handlers = [*ROUTES, *ESTIMATE_ROUTES, *DISPATCH_ROUTES, *WATCH_ROUTES, *LOG_ROUTES, *pages]
    app = Litestar(
        # The OPTIONS handlers first: each path's Allow names all of its methods.
        route_handlers=[*options_handlers(handlers), *handlers],
        on_startup=[_attach_watch],
        dependencies={"user": Provide(authenticate, sync_to_thread=False)},
        exception_handlers={
            DomainError: _domain_error,
            ControllerStoppedError: _stopped,
            ViewDamagedError: _views_damaged,
            ViewsBehindError: _views_behind,
            HTTPException: _http_error,
            Exception: _internal_error,
        },
        middleware=[request_log],
        request_class=JsonBodyRequest,
        request_max_body_size=MAX_BODY_BYTES,
        openapi_config=OpenAPIConfig(
            title="costart",
            version="0.1.0",
            path="/schema",
            components=Components(security_schemes=SECURITY_SCHEMES),
            security=[{BEARER: []}],
            # The docs page is rendered here; the default ones load scripts from a CDN.
            render_plugins=[OfflineDocsPlugin(), JsonRenderPlugin()],
        ),
        state=State({"service": service, "tokens": tokens, "registry": registry, "watch": watch}),
        debug=False,
        logging_config=None,  # the process logs through structlog (costart.logging_setup)
    )
    app.state.logs = LogRelay()  # task output, in memory only (ADR 0084)
    return app
