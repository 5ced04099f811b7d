"""A task's output, relayed from its node's agent (ADR 0084).

============================================ ===== ===== ============ ======
route                                        owner admin agent        claims
============================================ ===== ===== ============ ======
read a task's log                            own   all   no           no
reads waiting for a node, answers to them    no    all   its nodes    no
============================================ ===== ===== ============ ======

The agent opens no port: it long-polls for the reads callers are waiting on and posts
what it read (`costart.service.log_relay`). Log text is never written to the event log.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Annotated, Any, Final

import msgspec
from litestar import Request, get, post
from litestar.datastructures import State
from litestar.exceptions import ClientException, HTTPException, PermissionDeniedException
from litestar.openapi.spec import Example, OpenAPIMediaType, OpenAPIResponse, Operation
from litestar.params import Parameter

from costart.domain import RunSpec, task_log_path
from costart.domain.errors import Conflict, NotFound, SpecError
from costart.domain.states import GROUP_TERMINAL
from costart.projections import GroupView, MemberView, TaskView
from costart.rest.current_user import CurrentUser
from costart.rest.dispatch_routes import GroupName, MemberName, NodeName, TaskIndex, require_node
from costart.rest.log_wire import MAX_PIECES_BODY, LogChunk, LogPieces, LogPiecesTaken, LogRead
from costart.rest.openapi import errors, struct_body
from costart.service.controller_service import Service
from costart.service.log_relay import (
    LOG_MAX_TAIL_LINES,
    LOG_MAX_WAIT_S,
    Delivery,
    LogKey,
    LogRefused,
    LogRelay,
    LogUnavailable,
    Want,
)

ANSWER_S: Final = 10.0  # how long a node's agent has to answer a read at all
NOT_STARTED_PAUSE_S: Final = 1.0  # a follower of a task not started yet asks again after

_UNAVAILABLE = errors(503, 504)

Attempt = Annotated[
    int | None,
    Parameter(
        ge=0,
        schema_extra={"minimum": 0},  # the framework drops a bound of 0 from the document
        description="the attempt whose output to read (default: the task's current one)",
        examples=[Example(value=1)],
        required=False,
    ),
]
Offset = Annotated[
    int | None,
    Parameter(
        ge=0,
        schema_extra={"minimum": 0},
        description="read from this byte of the attempt's log (default 0; see `tail`)",
        examples=[Example(value=0)],
        required=False,
    ),
]
Tail = Annotated[
    int | None,
    Parameter(
        ge=0,
        le=LOG_MAX_TAIL_LINES,
        schema_extra={"minimum": 0, "maximum": LOG_MAX_TAIL_LINES},
        description="instead of an offset: start at the last this many lines "
        "(within the last 256 KiB of the file)",
        examples=[Example(value=20)],
        required=False,
    ),
]
Wait = Annotated[
    float,
    Parameter(
        ge=0,
        le=LOG_MAX_WAIT_S,
        schema_extra={"minimum": 0, "maximum": LOG_MAX_WAIT_S},
        description="seconds to wait for new output of a running attempt before "
        "answering with none (a follower's long poll)",
        examples=[Example(value=20)],
    ),
]

CHUNK_EXAMPLE = LogChunk(
    group="grpo-run-42",
    member="trainer",
    task=0,
    attempt=1,
    latest_attempt=1,
    node="h100-0000",
    offset=0,
    next_offset=38,
    size=38,
    text="step 1 loss 0.93\nstep 2 loss 0.88\n",
    complete=False,
    final=False,
)


@dataclass
class ReadLogOperation(Operation):
    """The answer's example: a running trainer's first two lines."""

    def __post_init__(self) -> None:
        answer = (self.responses or {}).get("200")
        if isinstance(answer, OpenAPIResponse) and answer.content:
            for media in answer.content.values():
                if isinstance(media, OpenAPIMediaType):
                    media.examples = {
                        "running": Example(
                            summary="a running task's first lines",
                            value=msgspec.to_builtins(CHUNK_EXAMPLE),
                        )
                    }


READ_DESCRIPTION: Final = (
    "The group's owner and admins only (another owner is 403): the output may hold the "
    "task's secrets. The node's agent reads the attempt's log file when asked, over its "
    "own connection (it refuses a file the task replaced with a link: 409; no file yet: "
    "404; no answer within 10 s: 504), and serve keeps a bounded window of it in memory, "
    "never in the event log (ADR 0084). Read on from `next_offset`: `complete` says the "
    "attempt ended and was read whole, `final` that no more output will come (the group "
    "ended). A follower passes `wait` to be answered when new output comes; `tail` starts "
    "at the last lines instead of an offset. A task never started answers empty text."
)
WANTED_DESCRIPTION: Final = (
    "The agent of the node (or an admin): the reads callers wait on, answered at once "
    "when there are some, else after at most `wait` seconds with none (the agent's long "
    "poll: it listens on no port). Answer each with `POST` on the same path."
)
ANSWER_DESCRIPTION: Final = (
    "The agent of the node (or an admin): one piece per read, base64 output read from "
    "the file at `offset`. A piece for a read of another node, or for one that no longer "
    "waits, is dropped (`taken` counts the others)."
)


def _relay(state: State) -> LogRelay:
    relay: LogRelay = state.logs
    return relay


def _task_of(member: MemberView, task: int) -> TaskView:
    found = next((t for t in member.tasks if t.index == task), None)
    if found is None:
        raise NotFound(f"member {member.group}/{member.name} has no task {task} placed")
    return found


def _member_of(service: Service, name: str, member: str) -> tuple[GroupView, MemberView]:
    group = service.views.group(name)
    for row in service.views.members(name):
        if row.name == member:
            return group, row
    raise NotFound(f"group {name} has no member {member!r}")


@get(
    "/v1/groups/{name:str}/members/{member:str}/tasks/{task:int}/log",
    summary="Read a task's output (relayed from its node's agent)",
    responses={**errors(400, 401, 403, 404, 409, 422), **_UNAVAILABLE},
    response_description="the output of one attempt from `offset` to `next_offset`",
    operation_class=ReadLogOperation,
    description=READ_DESCRIPTION,
)
async def read_task_log(
    name: GroupName,
    member: MemberName,
    task: TaskIndex,
    user: CurrentUser,
    state: State,
    attempt: Attempt = None,
    offset: Offset = None,
    tail: Tail = None,
    wait: Wait = 0.0,
) -> LogChunk:
    """`READ_DESCRIPTION`."""
    if offset is not None and tail is not None:
        raise SpecError("tail", "give offset or tail, not both")
    service: Service = state.service
    group, row = _member_of(service, name, member)
    if not user.may_act_for(group.owner):
        raise PermissionDeniedException(
            f"{user.name} ({user.role}) may not read the logs of groups owned by {group.owner}"
        )
    run = row.run
    if run is None:
        raise Conflict(f"member {name}/{member} has no run table: no agent writes its output")
    current = _task_of(row, task)
    chosen = current.attempt if attempt is None else attempt
    if chosen > current.attempt:
        raise NotFound(
            f"task {name}/{member}/{task} has no attempt {chosen} (its latest is {current.attempt})"
        )
    answer = _Answer(group, row, current, chosen)
    if chosen == current.attempt and current.started_at_ns is None:
        # Never launched: no file to ask for. Still placed, it may start (a follower asks
        # again); else it ended unstarted (refused on its node, cancelled): nothing came.
        waiting = current.state == "PLACED" and group.state not in GROUP_TERMINAL
        if waiting:
            await asyncio.sleep(min(wait, NOT_STARTED_PAUSE_S))
        return answer(offset or 0, b"", 0, running=waiting)
    key = LogKey(group.id, member, task, chosen)
    want = Want(
        0,
        key,
        group.name,
        group.owner,
        _log_path(run, group, member, task, chosen),
        None if tail is not None else offset or 0,
        tail,
    )
    try:
        chunk = await _relay(state).read(current.node, want, wait, ANSWER_S)
    except LogUnavailable as error:
        raise HTTPException(status_code=error.status, detail=str(error)) from None
    except LogRefused as error:
        if error.missing:
            raise NotFound(f"no output of attempt {chosen} yet: {error}") from None
        raise Conflict(str(error)) from None
    return answer(chunk.offset, chunk.data, chunk.size, running=chunk.running)


class _Answer:
    """A `LogChunk` for one attempt: cut at a whole character unless nothing follows."""

    def __init__(self, group: GroupView, row: MemberView, task: TaskView, attempt: int) -> None:
        self.group, self.row, self.task, self.attempt = group, row, task, attempt

    def __call__(self, offset: int, data: bytes, size: int, *, running: bool) -> LogChunk:
        ended = not running
        whole = ended and offset + len(data) >= size
        if not whole:
            data = whole_characters(data)
        complete = ended and offset + len(data) >= size
        return LogChunk(
            group=self.group.name,
            member=self.row.name,
            task=self.task.index,
            attempt=self.attempt,
            latest_attempt=self.task.attempt,
            node=self.task.node,
            offset=offset,
            next_offset=offset + len(data),
            size=size,
            text=data.decode("utf-8", errors="replace"),
            complete=complete,
            final=complete
            and self.attempt == self.task.attempt
            and self.group.state in GROUP_TERMINAL,
        )


def _log_path(run: RunSpec, group: GroupView, member: str, task: int, attempt: int) -> str:
    return task_log_path(run, group.name, group.id, member, task, attempt)


def whole_characters(data: bytes) -> bytes:
    """``data`` without a UTF-8 character its end cuts in two (left for the next read);
    an invalid byte is kept (it decodes as U+FFFD, whatever follows)."""
    for back in range(1, min(4, len(data)) + 1):
        byte = data[-back]
        if 0x80 <= byte <= 0xBF:
            continue  # a continuation byte: look further back for its lead
        needs = 2 if 0xC2 <= byte <= 0xDF else 3 if 0xE0 <= byte <= 0xEF else 4
        if byte < 0x80 or not 0xC2 <= byte <= 0xF4:
            return data  # ASCII, or a byte no character starts with
        return data if back >= needs else data[:-back]
    return data


@get(
    "/v1/nodes/{node:str}/log-reads",
    summary="The log reads waiting on a node's agent (its long poll)",
    description=WANTED_DESCRIPTION,
    responses=errors(400, 401, 403),
)
async def node_log_reads(
    node: NodeName, user: CurrentUser, state: State, wait: Wait = 0.0
) -> list[LogRead]:
    """`WANTED_DESCRIPTION`."""
    require_node(user, node, "read the log reads")
    wants = await _relay(state).wanted(node, wait)
    return [
        LogRead(
            id=w.id,
            group=w.group,
            group_id=w.key.group_id,
            member=w.key.member,
            task=w.key.task,
            attempt=w.key.attempt,
            owner=w.owner,
            path=w.path,
            offset=w.offset,
            tail=w.tail,
        )
        for w in wants
    ]


@post(
    "/v1/nodes/{node:str}/log-reads",
    status_code=200,
    summary="A node's agent answers log reads",
    description=ANSWER_DESCRIPTION,
    operation_class=struct_body(
        LogPieces,
        "what the agent read, one piece per read",
        {"pieces": [{"id": 7, "offset": 0, "size": 17, "running": True, "data": "c3RlcCAxCg=="}]},
    ),
    responses=errors(400, 401, 403, 413, 415),
    request_max_body_size=MAX_PIECES_BODY,
)
async def answer_log_reads(
    request: Request[Any, Any, State], node: NodeName, user: CurrentUser, state: State
) -> LogPiecesTaken:
    """`ANSWER_DESCRIPTION`."""
    require_node(user, node, "answer log reads")
    try:  # strictly: a 0 is not false, "5" not a number (the framework is lenient)
        data = msgspec.convert(_integral(await request.json()), LogPieces, strict=True)
    except msgspec.ValidationError as error:
        raise ClientException(f"invalid request: {error}") from None
    deliveries = [
        Delivery(p.id, p.offset, p.raw(), p.size, p.running, p.missing, p.refused)
        for p in data.pieces
    ]
    return LogPiecesTaken(taken=_relay(state).deliver(node, deliveries))


def _integral(body: Any) -> Any:
    """The pieces' integral floats as ints: JSON Schema's integer is a number without a
    fraction (``12.0`` is one), which strict decoding would refuse. Only the body's own
    shape is walked (never recursively: a deep document is refused by its type)."""
    pieces = body.get("pieces") if isinstance(body, dict) else None
    if not isinstance(pieces, list):
        return body
    return {
        **body,
        "pieces": [
            {k: _whole(v) for k, v in piece.items()} if isinstance(piece, dict) else piece
            for piece in pieces
        ],
    }


def _whole(value: Any) -> Any:
    return int(value) if isinstance(value, float) and value.is_integer() else value


LOG_ROUTES = [read_task_log, node_log_reads, answer_log_reads]
