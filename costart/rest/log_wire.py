"""The bodies of the log relay's routes (ADR 0084), shared by `serve`, the node agent
and `costart.client`: msgspec only, so an agent or a client imports no web framework.

An agent long-polls ``GET /v1/nodes/{node}/log-reads`` for `LogRead`s and answers each
with a `LogPiece` (``POST`` the same path, a `LogPieces` body); a caller reads
``GET /v1/groups/{name}/members/{member}/tasks/{task}/log`` and gets a `LogChunk`.
"""

from __future__ import annotations

import base64
from typing import Annotated, Final

import msgspec
from msgspec import Meta

LOG_PIECE_BYTES: Final = 256 * 1024  # the most an agent reads for one read
LOG_BATCH_BYTES: Final = 512 * 1024  # an agent's post carries at most this much output
LOG_MAX_PIECES: Final = 256  # answers in one post
BASE64_PATTERN: Final = "^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$"
MAX_PIECES_BODY: Final = 1024 * 1024  # its body (base64 is 4/3 of the bytes): the route's limit


class LogRead(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A read a node's agent is asked to make of a task's log file."""

    id: Annotated[int, Meta(description="the read's id, which the answer names")]
    group: Annotated[str, Meta(description="the group's name")]
    group_id: Annotated[str, Meta(description="the group's id")]
    member: Annotated[str, Meta(description="the member's name")]
    task: Annotated[int, Meta(description="the task's index")]
    attempt: Annotated[int, Meta(description="the task's attempt whose log is read")]
    owner: Annotated[str, Meta(description="the group's owner (whose account wrote the file)")]
    path: Annotated[str, Meta(description="the log file, relative to the agent's work root")]
    offset: Annotated[
        Annotated[int, Meta(ge=0)] | None,
        Meta(description="read from this byte (null: read the tail)"),
    ] = None
    tail: Annotated[
        Annotated[int, Meta(ge=0)] | None,
        Meta(description="the last lines to read, when offset is null"),
    ] = None


class LogPiece(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """An agent's answer to one `LogRead`."""

    id: Annotated[int, Meta(ge=1, description="the read it answers")]
    offset: Annotated[int, Meta(ge=0, description="the byte of the file data starts at")]
    size: Annotated[int, Meta(ge=0, description="the file's size when it was read")]
    running: Annotated[
        bool, Meta(description="the attempt's process still runs (false: the file is whole)")
    ]
    data: Annotated[
        str,
        Meta(
            pattern=BASE64_PATTERN,
            max_length=LOG_PIECE_BYTES * 4 // 3 + 4,
            description="the bytes read, base64 (RFC 4648 with padding)",
        ),
    ] = ""

    def raw(self) -> bytes:
        """The bytes read (the pattern makes the text valid base64)."""
        return base64.b64decode(self.data, validate=True)

    missing: Annotated[
        Annotated[str, Meta(max_length=500)] | None,
        Meta(description="there is no such file: why"),
    ] = None
    refused: Annotated[
        Annotated[str, Meta(max_length=500)] | None,
        Meta(description="why the file was not read (a link, not a plain file...)"),
    ] = None


def base64_text(data: bytes) -> str:
    """``data`` as a `LogPiece` carries it."""
    return base64.b64encode(data).decode("ascii")


class LogPieces(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    pieces: Annotated[
        list[LogPiece], Meta(max_length=LOG_MAX_PIECES, description="answers to reads")
    ]


class LogPiecesTaken(msgspec.Struct, frozen=True):
    taken: Annotated[int, Meta(description="answers that met a waiting read")]


class LogChunk(msgspec.Struct, frozen=True):
    """Output of one attempt of one task, from ``offset`` to ``next_offset``."""

    group: Annotated[str, Meta(description="the group's name")]
    member: Annotated[str, Meta(description="the member's name")]
    task: Annotated[int, Meta(description="the task's index")]
    attempt: Annotated[int, Meta(description="the attempt whose output this is")]
    latest_attempt: Annotated[int, Meta(description="the task's current attempt")]
    node: Annotated[str, Meta(description="the node the file was read on")]
    offset: Annotated[int, Meta(description="the byte of the file text starts at")]
    next_offset: Annotated[int, Meta(description="where to read on (offset + bytes of text)")]
    size: Annotated[int, Meta(description="the file's size when last read on the node")]
    text: Annotated[
        str,
        Meta(
            description="the output, as UTF-8 (an invalid byte is U+FFFD; a character cut "
            "by the chunk's end is left for the next read)"
        ),
    ]
    complete: Annotated[
        bool,
        Meta(description="this attempt ended and its output was read to the end"),
    ]
    final: Annotated[
        bool,
        Meta(
            description="complete, the latest attempt, and the group ended: no more "
            "output will come for this task"
        ),
    ]
