"""``GET /v1/expected-starts``: every waiting group's expected start, as last planned
off the command path (issue 36, ADR 0136), with the log position and controller time
it was planned at and whether it is stale. Never logged; the group rows carry the same
estimate as ``expected_start``."""

from __future__ import annotations

from litestar import get
from litestar.datastructures import State

from costart.rest.current_user import CurrentUser
from costart.rest.openapi import errors
from costart.service.controller_service import Service
from costart.service.expected_starts import ExpectedStarts


@get(
    "/v1/expected-starts",
    summary="Expected starts of the waiting groups",
    responses=errors(401),
)
async def expected_starts(user: CurrentUser, state: State) -> ExpectedStarts:
    """The waiting groups' expected starts in queue order, from one plan: its log
    position, controller time, how long it took, and whether the state has moved past
    it (``stale``, with the reason). Answered from memory: it never plans, never waits."""
    service: Service = state.service
    return service.expected_starts()


ESTIMATE_ROUTES = [expected_starts]
