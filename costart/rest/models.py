"""The REST API's own bodies (the view rows of `costart.projections` are the rest)."""

from __future__ import annotations

from typing import Annotated

import msgspec
from msgspec import Meta

from costart.domain.events import PendReason
from costart.projections import PendEntry


class ErrorBody(msgspec.Struct, frozen=True, omit_defaults=True):
    """Every error response: a message, and the spec field at fault when there is one."""

    error: Annotated[str, Meta(description="what went wrong")]
    field: Annotated[str | None, Meta(description="the spec field at fault, when there is one")] = (
        None
    )


class Why(msgspec.Struct, frozen=True):
    """Why a group is (or was) not running: its current reason and every change."""

    group: Annotated[str, Meta(description="the group's name")]
    state: Annotated[str, Meta(description="the group's state")]
    pend_reason: Annotated[PendReason | None, Meta(description="why it is not running now")]
    history: Annotated[tuple[PendEntry, ...], Meta(description="every change of its pend reason")]


class Health(msgspec.Struct, frozen=True):
    status: Annotated[str, Meta(description="ok when the server answers")]
    position: Annotated[int, Meta(description="the log position its views have read")]
