"""The REST handlers: thin translations between HTTP and the `Service`.

Reads come from the views; commands go through the Service, after the ownership check
(ADR 0007). Domain errors become status codes in `costart.rest.http_app`.
"""

from __future__ import annotations

import time
from collections.abc import Generator
from typing import Annotated, Final

from litestar import Request, Response, delete, get, post
from litestar.datastructures import MutableScopeHeaders, ResponseHeader, State
from litestar.exceptions import NotAuthorizedException, PermissionDeniedException
from litestar.params import Parameter, QueryParameter
from msgspec import Meta
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from costart.domain import limits
from costart.domain.actors import Actor
from costart.domain.errors import DomainError
from costart.domain.labels import parse_selector
from costart.domain.spec import is_name
from costart.domain.states import GroupStatus
from costart.projections import GroupView, HoldView, MemberView
from costart.rest import env_values
from costart.rest.auth import Tokens, User
from costart.rest.current_user import CurrentUser
from costart.rest.models import NAME_IN_PATH, Health
from costart.rest.openapi import SubmitOperation, errors, linked, list_links, node_links
from costart.rest.paging import (
    LINK_HEADER,
    GroupEventsContinue,
    GroupMembersContinue,
    GroupsContinue,
    HoldsContinue,
    Limit,
    MembersContinue,
    page,
    streamed_page,
)
from costart.rest.submit_path import failed_before, run_submit, submit_fast_path
from costart.rest.timed import (
    TimedEvent,
    TimedGroup,
    TimedGroupDetail,
    TimedMember,
    TimedWhy,
    detail_doc,
    event_doc,
    group_doc,
    member_doc,
    pend_entry_doc,
)
from costart.service.controller_service import Service
from costart.service.queries import why_not_running

GroupName = Annotated[str, NAME_IN_PATH]
_TERM = f"{limits.LABEL_PATTERN}={limits.LABEL_PATTERN}"
SELECTOR_PATTERN: Final = f"^{_TERM}(,{_TERM})*$"
# A request's head must fit the server's limit (16 KiB), so a query's size is bounded.
SELECTOR_ITEMS: Final = 8
SELECTOR_CHARS: Final = 1024
SELECTOR_ITEM: Final = {"type": "string", "maxLength": SELECTOR_CHARS, "pattern": SELECTOR_PATTERN}


def authenticate(request: Request[object, object, State]) -> User:
    """The caller named by the bearer token; 401 without a known one."""
    tokens: Tokens = request.app.state.tokens
    authorization = request.headers.get("authorization")
    user = tokens.user_for_header(authorization)
    if user is None:
        raise NotAuthorizedException(tokens.refusal(authorization))
    return user


def _checked(name: str) -> str:
    """A group name from a URL, refused (400) unless it matches the name rule whole: the
    server never looks up, nor acts on, a name no spec could have."""
    if not is_name(name):
        raise DomainError(f"bad group name {name!r}: not a valid group name")
    return name


def _service(state: State) -> Service:
    service: Service = state.service
    return service


@post(
    "/v1/groups",
    status_code=201,
    summary="Submit a group spec",
    operation_class=SubmitOperation,
    middleware=[submit_fast_path],
    responses=errors(400, 401, 403, 409, 413, 415, 422),
    response_headers=[
        ResponseHeader(
            name="Location",
            description="the new group's URL (GET it for the group's detail)",
            documentation_only=True,
        ),
        ResponseHeader(
            name="Warning",
            description='299 - "FIELD: ..." for what the accepted spec may still get wrong '
            "(a plain env value that looks like a secret); one header per warning",
            documentation_only=True,
            required=False,
        ),
    ],
)
async def submit_group(
    request: Request[object, object, State], user: CurrentUser, state: State
) -> Response[TimedGroup]:
    """Submit a group spec (JSON, or TOML with ``Content-Type: application/toml``).

    422 names the field at fault; 403 if the spec's owner is not the caller (admins may
    submit for anyone); 409 if a live group has the name. Most submits are answered by
    the route's middleware (`costart.rest.submit_path`) running the same `run_submit`;
    a submit it tried and that failed arrives here with its error, to be answered."""
    failed = failed_before(request.scope)
    if failed is not None:
        raise failed
    data = await request.body()
    content_type = request.headers.get("content-type", "")
    submitted = await run_submit(_service(state), user, data, content_type)
    headers = MutableScopeHeaders()
    for name, value in submitted.headers():
        headers.add(name, value)
    return Response(submitted.created, status_code=201, headers=headers)


@get(
    "/v1/groups",
    sync_to_thread=True,
    summary="List groups",
    operation_class=linked(list_links),
    responses=errors(400, 401),
    response_headers=[LINK_HEADER],
)
def list_groups(
    request: Request[object, object, State],
    user: CurrentUser,
    state: State,
    owner: Annotated[
        str | None,
        Parameter(
            description="only this owner's groups",
            max_length=limits.MAX_OWNER_LENGTH,
            pattern=f"^{limits.OWNER_PATTERN}$",
        ),
    ] = None,
    group_state: Annotated[GroupStatus | None, QueryParameter(name="state")] = None,
    label: Annotated[
        # The pattern is documented, and checked by `parse_selector` (its error names the
        # term at fault).
        list[Annotated[str, Meta(max_length=SELECTOR_CHARS)]] | None,
        Parameter(
            description="only groups with these labels: key=value terms, comma-separated "
            "(repeat for more; every term must hold)",
            max_items=SELECTOR_ITEMS,
            # The framework documents the list, not its items' constraints.
            schema_extra={"items": SELECTOR_ITEM},
        ),
    ] = None,
    limit: Limit = None,
    continue_token: GroupsContinue = None,
) -> Response[list[TimedGroup]]:
    """Groups in submission order, optionally only one owner's, one state's or those
    with some labels; paged (`costart.rest.paging`). A waiting group carries its
    expected start (never logged; `expected_start`)."""
    selector = parse_selector(label or ())
    now_ns = time.time_ns()
    service = _service(state)
    views = service.views
    expected = {e.group: e for e in service.expected_starts().groups}

    def rows_from(start: int) -> Generator[GroupView, None, None]:
        return views.iter_groups(owner=owner, state=group_state, selector=selector, skip=start)

    return streamed_page(
        request,
        "groups",
        rows_from,
        limit,
        continue_token,
        lambda g: group_doc(g, now_ns, expected.get(g.name)),
    )


@get(
    "/v1/groups/{name:str}",
    sync_to_thread=True,
    summary="Describe a group",
    responses=errors(400, 401, 404),
)
def get_group(name: GroupName, user: CurrentUser, state: State) -> TimedGroupDetail:
    """The group with its members, holds, pend-reason history and recent events.
    Run tables' env values are shown as in the list of the group's members."""
    name = _checked(name)
    service = _service(state)
    detail = env_values.group_detail(user, service.views.describe(name))
    return detail_doc(detail, time.time_ns(), service.expected_starts().of(name))


@get(
    "/v1/groups/{name:str}/members",
    sync_to_thread=True,
    summary="A group's members",
    operation_class=linked(node_links),
    responses=errors(400, 401, 404),
    response_headers=[LINK_HEADER],
)
def get_members(
    request: Request[object, object, State],
    name: GroupName,
    user: CurrentUser,
    state: State,
    limit: Limit = None,
    continue_token: GroupMembersContinue = None,
) -> Response[list[TimedMember]]:
    """The group's members in spec order. A run table's env values are shown to the
    group's owner, admins, and the agents of the nodes its tasks are placed on; anyone
    else reads each value as ``"(hidden)"`` and ``env_withheld`` true."""
    name = _checked(name)
    views = _service(state).views
    group = views.group(name)
    rows = env_values.group_members(user, group, views.members(name))
    return page(request, "group-members", [member_doc(m) for m in rows], limit, continue_token)


@get(
    "/v1/members",
    sync_to_thread=True,
    summary="Every group's members",
    responses=errors(400, 401),
    response_headers=[LINK_HEADER],
)
def all_members(
    request: Request[object, object, State],
    user: CurrentUser,
    state: State,
    limit: Limit = None,
    continue_token: MembersContinue = None,
) -> Response[list[TimedMember]]:
    """Every group's members, groups in submission order; run tables' env values as for
    a group's members."""
    views = _service(state).views
    reader = env_values.MemberRows(user, views.holds)

    def doc(pair: tuple[GroupView, MemberView]) -> TimedMember:
        return member_doc(reader.row(*pair))

    rows_from = views.iter_members_with_groups
    return streamed_page(request, "members", rows_from, limit, continue_token, doc)


@get(
    "/v1/groups/{name:str}/events",
    sync_to_thread=True,
    summary="A group's timeline",
    responses=errors(400, 401, 404),
    response_headers=[LINK_HEADER],
)
def get_events(
    request: Request[object, object, State],
    name: GroupName,
    user: CurrentUser,
    state: State,
    limit: Limit = None,
    continue_token: GroupEventsContinue = None,
) -> Response[list[TimedEvent]]:
    name = _checked(name)
    rows = [event_doc(e) for e in _service(state).views.timeline(name)]
    return page(request, "group-events", rows, limit, continue_token)


@get(
    "/v1/groups/{name:str}/why",
    sync_to_thread=True,
    summary="Why a group is pending",
    responses=errors(400, 401, 404),
)
def why(name: GroupName, user: CurrentUser, state: State) -> TimedWhy:
    answer = why_not_running(_service(state).views, _checked(name))
    return TimedWhy(
        group=answer.group,
        state=answer.state,
        pend_reason=answer.pend_reason,
        history=tuple(pend_entry_doc(p) for p in answer.history),
    )


def cancel_as(name: str, user: User, state: State) -> TimedGroup:
    """Cancel a live group as ``user``: 403 unless the caller owns it or is an admin. A
    group already cancelled is answered as it is and nothing is written (a client that
    retries a cancel whose answer it lost is told it holds); one that ended otherwise
    (succeeded, failed) is 409 naming its state."""
    name = _checked(name)
    service = _service(state)
    row = service.views.group(name)
    if not user.may_act_for(row.owner):
        raise PermissionDeniedException(f"{user.name} may not cancel groups owned by {row.owner}")
    if row.state == "CANCELLED":
        return group_doc(row, time.time_ns())
    return group_doc(service.cancel(name, Actor.user(user.name)), time.time_ns())


_CANCEL_ERRORS: Final = errors(400, 401, 403, 404, 409)


@post(
    "/v1/groups/{name:str}/cancel",
    status_code=200,
    sync_to_thread=True,
    summary="Cancel a group",
    responses=_CANCEL_ERRORS,
)
def cancel_group(name: GroupName, user: CurrentUser, state: State) -> TimedGroup:
    """Cancel a live group: 403 unless the caller owns it or is an admin; a group
    already cancelled is answered as it is, nothing written; 409 if it ended otherwise.
    The same as ``DELETE /v1/groups/{name}``."""
    return cancel_as(name, user, state)


@delete(
    "/v1/groups/{name:str}",
    status_code=200,
    sync_to_thread=True,
    summary="Cancel a group (DELETE)",
    responses=_CANCEL_ERRORS,
)
def delete_group(name: GroupName, user: CurrentUser, state: State) -> TimedGroup:
    """Cancel a live group, as ``POST /v1/groups/{name}/cancel`` does (the same callers,
    answers and errors). The group is not removed: it stays readable as history,
    CANCELLED, and its name is free for a new group."""
    return cancel_as(name, user, state)


@get(
    "/v1/holds",
    sync_to_thread=True,
    summary="Capacity held or used per node",
    responses=errors(400, 401),
    response_headers=[LINK_HEADER],
)
def holds(
    request: Request[object, object, State],
    user: CurrentUser,
    state: State,
    limit: Limit = None,
    continue_token: HoldsContinue = None,
) -> Response[list[HoldView]]:
    return page(request, "holds", _service(state).views.holds(), limit, continue_token)


@get("/healthz", sync_to_thread=True, summary="Liveness", exclude_from_auth=True, security=[{}])
def healthz(state: State) -> Health:
    return Health(status="ok", position=_service(state).views.position())


@get(
    "/metrics",
    sync_to_thread=True,
    summary="Prometheus metrics",
    media_type=CONTENT_TYPE_LATEST,
    security=[{}],  # no token needed (an empty requirement)
)
def metrics(state: State) -> Response[bytes]:
    return Response(generate_latest(state.registry), media_type=CONTENT_TYPE_LATEST)


ROUTES = [
    submit_group,
    list_groups,
    get_group,
    get_members,
    all_members,
    get_events,
    why,
    cancel_group,
    delete_group,
    holds,
    healthz,
    metrics,
]
