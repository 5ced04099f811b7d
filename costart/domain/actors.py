"""Who caused a change (docs/design.md §3.3, §8): every command from outside names its actor, and
the events it writes carry it, so "who cancelled this?" has an answer in the log.

Events written by costart's own placement step carry no actor (``None``): they are
costart's decisions, not commands from outside.
"""

from __future__ import annotations

import re
import threading
from typing import Final, Literal, get_args

import msgspec

from costart.domain import limits
from costart.domain.errors import DomainError

ActorKind = Literal["user", "agent", "host", "timer"]
ACTOR_KINDS: Final[tuple[ActorKind, ...]] = get_args(ActorKind)
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@:/-]*")


class _CheckedBytes(threading.local):
    """Set (by `decoding_checked_log`) only for the length of one decode call of log bytes
    whose checksum was just verified: every actor in them was checked when its command
    came in, so decoding them again need not repeat the check (replay's hot path).
    Per thread, and off again before the decoded event reaches any other code."""

    on = False


CHECKED_LOG_BYTES: Final = _CheckedBytes()
"""The flag `Actor.__post_init__` reads; only the log readers set it, around a decode."""


class Actor(msgspec.Struct, frozen=True, gc=False, omit_defaults=True, array_like=True):
    """``kind``: a user (owner or admin, by name), a node agent (by its node or token
    name), the host controller embedding costart (by its component name), or costart's
    own timer (deadlines firing). Stored in events as ``[kind, name]``."""

    kind: ActorKind
    name: str = ""

    def __post_init__(self) -> None:
        if CHECKED_LOG_BYTES.on:
            return  # decoded from a checked log record: checked when it was written
        if self.kind not in ACTOR_KINDS:
            raise DomainError(f"actor kind {self.kind!r} is not one of {', '.join(ACTOR_KINDS)}")
        if self.name and (len(self.name) > limits.MAX_ACTOR_NAME or not _NAME.fullmatch(self.name)):
            raise DomainError(
                f"actor name {self.name!r}: at most {limits.MAX_ACTOR_NAME} characters of "
                "letters, digits and ._@:/- (starting with a letter or digit)"
            )
        if self.kind != "timer" and not self.name:
            raise DomainError(f"a {self.kind} actor needs a name")

    def __str__(self) -> str:
        return f"{self.kind}:{self.name}" if self.name else self.kind

    @classmethod
    def user(cls, name: str) -> Actor:
        return cls("user", name)

    @classmethod
    def agent(cls, name: str) -> Actor:
        return cls("agent", name)

    @classmethod
    def host(cls, name: str = "host") -> Actor:
        return cls("host", name)


TIMER: Final = Actor("timer")
"""Deadlines firing (`Controller.tick`)."""
