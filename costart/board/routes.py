"""The board's routes: the pages at ``/`` and ``/groups/NAME``, the fragments the page's
script re-reads as events arrive, the live stream, login and logout, cancel and scale.

Nothing is shown without a valid session (the login form instead); the stream and the
fragments answer 401. Writes go through the API's own functions (`cancel_as`,
`scale_as`: the same ownership rules) after `check_write` (Origin and CSRF token).
"""

from __future__ import annotations

import re
import time
from importlib import resources
from typing import Any, Final

from litestar import Request, Response, get, post
from litestar.datastructures import Cookie, State
from litestar.exceptions import PermissionDeniedException
from litestar.response import Stream

from costart.board import pages
from costart.board.failover import LEADER_ROUTES, board_peers, connect_src, safe_next
from costart.board.session import (
    COOKIE,
    CSRF_HEADER,
    check_write,
    csrf_token,
    own_origin,
    require_user,
    session_user,
)
from costart.domain import limits
from costart.domain.errors import DomainError, NotFound, SpecError
from costart.domain.spec import is_name
from costart.domain.states import GROUP_STATUSES
from costart.projections import GroupView, Views
from costart.replay.timeline import group_timeline
from costart.replay.timeline_html import legend_css
from costart.rest.auth import User
from costart.rest.dispatch_routes import scale_as
from costart.rest.env_values import group_detail
from costart.rest.routes import cancel_as
from costart.rest.watch_routes import watch_stream
from costart.service.controller_service import Service
from costart.service.expected_starts import ExpectedStart

HTML: Final = "text/html"
# No script or style but the shipped files; no framing; forms post here only.
CSP: Final = "default-src 'self'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'"
SECURITY_HEADERS: Final = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    # Not no-referrer: with it, a form posts "Origin: null" and the Origin check fails.
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}
STATIC: Final = {"board.js": "text/javascript; charset=utf-8", "board.css": "text/css"}
MAX_ROWS_ASKED: Final = 256
_SESSION_S: Final = 12 * 3600


def _html(
    body: str,
    status: int = 200,
    cookies: list[Cookie] | None = None,
    peers: tuple[str, ...] = (),
) -> Response[str]:
    """A page; ``peers``: the other servers the page's script may ask who leads."""
    headers = SECURITY_HEADERS
    if peers:  # the page asks the peers who leads (`costart.board.failover`): only them
        headers = {**headers, "Content-Security-Policy": f"{CSP}; {connect_src(peers)}"}
    return Response(body, status_code=status, media_type=HTML, headers=headers, cookies=cookies)


def _login(request: Request[Any, Any, State]) -> Response[str]:
    """The login form (401), coming back to the page asked for once logged in."""
    here = request.url.path + (f"?{request.url.query}" if request.url.query else "")
    moved = "seen" in request.query_params  # a page that moved here (ADR 0117)
    return _html(pages.login_page(next_page=safe_next(here), moved=moved), status=401)


def _service(state: State) -> Service:
    service: Service = state.service
    return service


def _filters(request: Request[Any, Any, State]) -> tuple[str | None, str | None, str | None]:
    """(state, owner, error) from the query: each matched whole, or an error naming it."""
    wanted = request.query_params.get("state") or None
    owner = request.query_params.get("owner") or None
    if wanted is not None and wanted not in GROUP_STATUSES:
        return None, None, f"state {wanted!r}: not one of {', '.join(GROUP_STATUSES)}"
    if owner is not None and (
        len(owner) > limits.MAX_OWNER_LENGTH or not re.fullmatch(limits.OWNER_PATTERN, owner)
    ):
        return None, None, f"owner {owner!r}: not a valid owner name"
    return wanted, owner, None


def _running_by_group(views: Views) -> dict[str, int]:
    """Running tasks per group id, from one pass over the members."""
    running: dict[str, int] = {}
    for group, member in views.iter_members_with_groups():
        running[group.id] = running.get(group.id, 0) + member.running
    return running


def _expected_by_name(service: Service) -> dict[str, ExpectedStart]:
    """The waiting groups' expected starts as last planned (never planned here)."""
    return {e.group: e for e in service.expected_starts().groups}


def _matches(group: GroupView, wanted: str | None, owner: str | None) -> bool:
    return (wanted is None or group.state == wanted) and (owner is None or group.owner == owner)


@get("/", sync_to_thread=True, include_in_schema=False)
def board(request: Request[Any, Any, State], state: State) -> Response[str]:
    """The groups table (the login form without a session)."""
    user = session_user(request)
    if user is None:
        return _login(request)
    service = _service(state)
    wanted, owner, error = _filters(request)
    views = service.views  # once: each read waits for the views to catch up
    position = views.position()  # first: events after it reach the page live
    now_ns = time.time_ns()
    running = _running_by_group(views)
    expected = _expected_by_name(service)
    rows = [
        pages.group_row(g, running.get(g.id, 0), now_ns, expected.get(g.name))
        for g in views.iter_groups(owner=owner, state=wanted)
    ]
    token = request.cookies.get(COOKIE, "")
    page = pages.groups_page(
        rows,
        user=user,
        csrf=csrf_token(token),
        position=position,
        state=wanted,
        owner=owner,
        error=error,
        peers=board_peers(request),
    )
    return _html(page, status=400 if error else 200, peers=board_peers(request))


@get("/board/rows", sync_to_thread=True, include_in_schema=False)
def rows(request: Request[Any, Any, State], state: State) -> Response[dict[str, str | None]]:
    """The rows of the groups named ``name`` (repeated) under the page's filters: each
    name's row HTML, or null when it is gone or filtered out; ``at``: the last log
    position the page saw (the rows show at least that much)."""
    require_user(request)
    names = request.query_params.getall("name", [])
    if len(names) > MAX_ROWS_ASKED:
        raise DomainError(f"at most {MAX_ROWS_ASKED} rows at a time (asked {len(names)})")
    wanted, owner, error = _filters(request)
    if error is not None:
        raise DomainError(error)
    for name in names:
        if not is_name(name):
            raise DomainError(f"bad group name {name!r}: not a valid group name")
    # The views as of the last event the page saw (``at``), else of every decision so
    # far: a page following the stream need not wait for what came after its event.
    at = request.query_params.get("at", "")
    service = _service(state)
    if at and not re.fullmatch(r"[0-9]{1,19}", at):
        raise DomainError(f"at {at!r}: expected a log position (digits)")
    views = service.views_at(int(at)) if at else service.views
    now_ns = time.time_ns()
    expected = _expected_by_name(service)
    answer: dict[str, str | None] = {}
    for name in names:
        try:
            group = views.group(name)
        except NotFound:
            answer[name] = None
            continue
        if not _matches(group, wanted, owner):
            answer[name] = None
            continue
        running = sum(m.running for m in views.members(name))
        answer[name] = pages.group_row(group, running, now_ns, expected.get(name))
    return Response(answer, headers=SECURITY_HEADERS)


def _group_parts(
    name: str, user: User, service: Service
) -> tuple[Any, Any, int, ExpectedStart | None]:
    if not is_name(name):
        raise DomainError(f"bad group name {name!r}: not a valid group name")
    views = service.views  # once: each read waits for the views to catch up
    position = views.position()
    detail = group_detail(user, views.describe(name))
    timeline = group_timeline(service.controller, name)
    return detail, timeline, position, service.expected_starts().of(name)


@get("/groups/{name:str}", sync_to_thread=True, include_in_schema=False)
def group_page(name: str, request: Request[Any, Any, State], state: State) -> Response[str]:
    """One group: lanes, members and tasks, holds, pend reasons, events."""
    user = session_user(request)
    if user is None:
        return _login(request)
    detail, timeline, position, expected = _group_parts(name, user, _service(state))
    token = request.cookies.get(COOKIE, "")
    peers = board_peers(request)
    page = pages.group_page(
        detail, timeline, user=user, csrf=csrf_token(token), position=position,
        now_ns=time.time_ns(), peers=peers, expected=expected,
    )  # fmt: skip
    return _html(page, peers=peers)


@get("/board/groups/{name:str}/body", sync_to_thread=True, include_in_schema=False)
def group_body(name: str, request: Request[Any, Any, State], state: State) -> Response[str]:
    """The live part of a group page, as it is now."""
    user = require_user(request)
    detail, timeline, _, expected = _group_parts(name, user, _service(state))
    return _html(pages.group_body(detail, timeline, user, time.time_ns(), expected))


@get("/board/watch", include_in_schema=False)
async def board_watch(
    request: Request[Any, Any, State], state: State, after: int | None = None
) -> Stream:
    """The watch stream for the page's ``EventSource`` (which resumes with
    ``Last-Event-ID``); ``?group=NAME`` keeps one group's events. Its keepalives are
    events: a page that hears nothing for two of them knows its server is gone. It
    carries the hint that new expected starts were planned (``expected-starts``, never
    a log event: ADR 0137), so a page re-reads its waiting groups then."""
    user = require_user(request)
    group = request.query_params.get("group")
    if group is not None and not is_name(group):
        raise DomainError(f"bad group name {group!r}: not a valid group name")
    return watch_stream(
        request, user, state, after=after, group=group, keepalive_events=True, hints=True
    )


@post("/board/login", include_in_schema=False)
async def login(request: Request[Any, Any, State]) -> Response[str]:
    """Trade a token for a session cookie; a wrong token is told so and shown nothing."""
    if request.headers.get("origin") != own_origin(request):
        raise PermissionDeniedException("cross-site login refused")
    form = await request.form()
    token = str(form.get("token", "")).strip()
    back_to = safe_next(str(form.get("next", "/")))
    tokens = request.app.state.tokens
    if not token or tokens.user_for_token(token) is None:
        return _html(pages.login_page("unknown token", next_page=back_to), status=401)
    cookie = Cookie(
        key=COOKIE,
        value=token,
        path="/",
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
        max_age=_SESSION_S,
    )
    return Response(
        "", status_code=303, headers={**SECURITY_HEADERS, "Location": back_to}, cookies=[cookie]
    )


@post("/board/logout", include_in_schema=False)
async def logout(request: Request[Any, Any, State]) -> Response[str]:
    form = await request.form()
    check_write(request, str(form.get("csrf", "")) or None)
    gone = Cookie(key=COOKIE, value="", path="/", httponly=True, samesite="strict", max_age=0)
    return Response(
        "", status_code=303, headers={**SECURITY_HEADERS, "Location": "/"}, cookies=[gone]
    )


@post(
    "/board/groups/{name:str}/cancel", status_code=200, sync_to_thread=True, include_in_schema=False
)
def board_cancel(name: str, request: Request[Any, Any, State], state: State) -> dict[str, str]:
    """Cancel as the session's user, by the API's rules."""
    user = check_write(request, request.headers.get(CSRF_HEADER))
    return {"state": cancel_as(name, user, state).state}


@post(
    "/board/groups/{name:str}/members/{member:str}/scale",
    status_code=200,
    sync_to_thread=True,
    include_in_schema=False,
)
def board_scale(
    name: str, member: str, request: Request[Any, Any, State], state: State
) -> dict[str, int]:
    """Scale a replica set as the session's user, by the API's rules (``?replicas=N``)."""
    user = check_write(request, request.headers.get(CSRF_HEADER))
    if not is_name(name) or not is_name(member):
        raise DomainError(f"bad group or member name {name!r}/{member!r}")
    replicas = request.query_params.get("replicas", "")
    if not re.fullmatch(r"[0-9]{1,6}", replicas):
        raise SpecError("replicas", f"expected a whole number, got {replicas!r}")
    return {"replicas": scale_as(name, member, int(replicas), user, state).desired}


@get("/board/static/{file:str}", include_in_schema=False)
async def static(file: str) -> Response[bytes]:
    """The board's script and style sheet, shipped in the package."""
    media = STATIC.get(file)
    if media is None:
        raise NotFound(f"no board file {file!r}")
    body = resources.files("costart.board").joinpath("static", file).read_bytes()
    if file == "board.css":
        body += legend_css().encode()
    return Response(body, media_type=media, headers=SECURITY_HEADERS)


BOARD_ROUTES = [
    board,
    rows,
    group_page,
    group_body,
    board_watch,
    login,
    logout,
    board_cancel,
    board_scale,
    static,
    *LEADER_ROUTES,
]
