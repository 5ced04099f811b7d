"""Questions about the groups that REST and the CLI both answer from the views.

The rows themselves are the views' (`costart.projections.Views`); what lives here is an
answer put together from more than one of them, so REST and the CLI give the same one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import msgspec
from msgspec import Meta

from costart.domain.events import PendReason
from costart.projections.models import PendEntry

if TYPE_CHECKING:
    from costart.projections import Views


class Why(msgspec.Struct, frozen=True):
    """Why a group is (or was) not running: its current reason and every change."""

    group: Annotated[str, Meta(description="the group's name")]
    state: Annotated[str, Meta(description="the group's state")]
    pend_reason: Annotated[PendReason | None, Meta(description="why it is not running now")]
    history: Annotated[tuple[PendEntry, ...], Meta(description="every change of its pend reason")]


def why_not_running(views: Views, name: str) -> Why:
    """The named group's row and then its pend-reason history (`NotFound` for no such
    group). Two reads: a change folded between them shows in the history first."""
    group = views.group(name)
    return Why(
        group=group.name,
        state=group.state,
        pend_reason=group.pend_reason,
        history=tuple(views.pend_history(name)),
    )
