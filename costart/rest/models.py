"""The REST API's own bodies (the view rows of `costart.projections` are the rest)."""

from __future__ import annotations

import msgspec

from costart.domain.events import PendReason
from costart.projections import PendEntry


class ErrorBody(msgspec.Struct, frozen=True, omit_defaults=True):
    """Every error response: a message, and the spec field at fault when there is one."""

    error: str
    field: str | None = None


class Why(msgspec.Struct, frozen=True):
    """Why a group is (or was) not running: its current reason and every change."""

    group: str
    state: str
    pend_reason: PendReason | None
    history: tuple[PendEntry, ...]


class Health(msgspec.Struct, frozen=True):
    status: str
    position: int
