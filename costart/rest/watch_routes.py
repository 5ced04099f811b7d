"""``GET /v1/watch``: the Server-Sent Events stream of committed changes (`WatchHub`).

Resumable: ``Last-Event-ID`` (or ``?after=``) is the last log position the client has;
without either the stream starts at the present. ``?group=NAME`` keeps one group's
events; ``?node=N`` (repeatable) keeps events that concern those nodes. An agent sees
only its own nodes: it may name some of them, and gets all of them if it names none.
Run tables' env values reach only the group's owner and admins: the stream only wakes
agents up, and they read a run table from the group's members (`costart.rest.env_values`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Annotated, Any, Final

from litestar import Request, get
from litestar.datastructures import State
from litestar.exceptions import PermissionDeniedException, ValidationException
from litestar.openapi.spec import OpenAPIMediaType, OpenAPIResponse, Operation
from litestar.params import Parameter
from litestar.response import Stream
from msgspec import Meta

from costart.domain import events
from costart.rest.auth import User
from costart.rest.current_user import CurrentUser
from costart.rest.env_values import sees_env_values
from costart.rest.models import NAME_IN_PATH, NODE_CHARS, NODE_PATTERN
from costart.rest.openapi import convert_schema, errors
from costart.rest.watch import KEEPALIVE, WatchFilter, WatchHub
from costart.service.controller_service import Service

EVENT_STREAM = "text/event-stream"
POSITION_PATTERN = "^[0-9]{1,19}$"


def watch_event_schema() -> dict[str, Any]:
    """One event of the stream (OpenAPI 3.1 describes an event stream's events by its
    ``schema``): a committed event, with its log position as ``id``, or the ``close`` a
    slow client gets. ``data`` is JSON (its fields in the operation's description)."""
    data = {"type": "string", "contentMediaType": "application/json"}
    return {
        "oneOf": [
            {
                "title": "CommittedEvent",
                "type": "object",
                "properties": {
                    "event": {"enum": sorted(t.__name__ for t in events.ALL_EVENTS)},
                    "id": {"type": "string", "pattern": POSITION_PATTERN},
                    "data": data,
                },
                "required": ["event", "id", "data"],
                "additionalProperties": False,
            },
            {
                "title": "Close",
                "type": "object",
                "properties": {"event": {"const": "close"}, "data": data},
                "required": ["event", "data"],
                "additionalProperties": False,
            },
        ]
    }


@dataclass
class WatchOperation(Operation):
    def __post_init__(self) -> None:
        answer = (self.responses or {}).get("200")
        if isinstance(answer, OpenAPIResponse):
            answer.description = "the events, as they are committed"
            answer.content = {
                EVENT_STREAM: OpenAPIMediaType(schema=convert_schema(watch_event_schema()))
            }


def _resume_position(request: Request[object, object, State], after: int | None) -> int | None:
    header = request.headers.get("last-event-id")
    if header is None:
        return after
    if not header.isdigit() or len(header) > 19:
        raise ValidationException("Last-Event-ID: expected a log position (digits)")
    return int(header)


def _nodes(user: User, node: list[str] | None) -> frozenset[str] | None:
    if user.role != "agent":
        return frozenset(node) if node else None
    if not node:
        return frozenset(user.nodes)
    foreign = sorted(set(node) - set(user.nodes))
    if foreign:
        raise PermissionDeniedException(
            f"{user.name} (agent) may not watch node {foreign[0]}: not one of its nodes"
        )
    return frozenset(node)


@get(
    "/v1/watch",
    summary="Watch committed changes (Server-Sent Events)",
    media_type=EVENT_STREAM,
    operation_class=WatchOperation,
    responses=errors(400, 401, 403, 404),
)
async def watch(
    request: Request[object, object, State],
    user: CurrentUser,
    state: State,
    after: Annotated[
        int | None,
        # The framework drops a bound of 0 from the document: stated again for it.
        Parameter(ge=0, le=2**62, schema_extra={"minimum": 0}, description="resume after it"),
    ] = None,
    group: Annotated[str | None, NAME_IN_PATH] = None,
    node: Annotated[
        list[Annotated[str, Meta(max_length=NODE_CHARS, pattern=NODE_PATTERN)]] | None,
        # A request's head must fit the server's limit (16 KiB): name at most 32 nodes
        # (an agent naming none watches all of its own).
        Parameter(
            max_items=32,
            description="only events about these nodes",
            # The framework documents the list, not its items' constraints.
            schema_extra={
                "items": {"type": "string", "maxLength": NODE_CHARS, "pattern": NODE_PATTERN}
            },
        ),
    ] = None,
) -> Stream:
    """Each event is ``id: POSITION``, ``event: TYPE``, ``data: {position, type, group,
    member, at, event}``. A slow client is closed with ``event: close`` and
    ``data: {reason, resume_after}``. The env values of a run table in an event are
    shown to the group's owner and admins; others get each as ``"(hidden)"`` and the
    run table's ``env_withheld`` true."""
    return watch_stream(request, user, state, after, group, node)


KEEPALIVE_EVENT: Final = b"event: keepalive\ndata: {}\n\n"
"""A keepalive a page's ``EventSource`` sees (a comment fires no event in a browser)."""


async def _keepalives_seen(chunks: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    async for chunk in chunks:
        yield KEEPALIVE_EVENT if chunk == KEEPALIVE else chunk


def watch_stream(
    request: Request[object, object, State],
    user: User,
    state: State,
    after: int | None = None,
    group: str | None = None,
    node: list[str] | None = None,
    keepalive_events: bool = False,
    hints: bool = False,
) -> Stream:
    """The stream ``user`` may read, from ``Last-Event-ID`` or ``after`` (else the
    present): the API's watch, and the board's (its caller authenticated by cookie).
    ``keepalive_events``: keepalives as ``keepalive`` events, so a browser can tell a
    silent stream from a server that stopped answering (the board's); ``hints``: the
    ``expected-starts`` hints too (`WatchHub.stream`)."""
    service: Service = state.service
    hub: WatchHub = state.watch
    group_id = service.views.group(group).id if group is not None else None
    where = WatchFilter(
        group_id=group_id,
        nodes=_nodes(user, node),
        # No nodes given: an agent is shown no values here, whatever its nodes run.
        shows_env=lambda owner: sees_env_values(user, owner),
    )
    position = _resume_position(request, after)
    start = hub.last_position if position is None else position
    chunks = hub.stream(start, where, hints)
    return Stream(
        _keepalives_seen(chunks) if keepalive_events else chunks,
        media_type=EVENT_STREAM,
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )


WATCH_ROUTES = [watch]
