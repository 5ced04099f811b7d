"""Group rows as `costart serve` answers them, with the expected start it adds to a
waiting group (never logged; ADR 0137), and how `get -o wide` and `describe` show it.

Over ``--server`` the rows are decoded as `EstimatedGroup` (the view row plus
``expected_start``), so ``-o json``/``yaml`` carry the estimate too. On a store read
directly there is no estimator (ADR 0137): the rows are plain view rows and a waiting
group's cell says ``n/a (no serve)``.
"""

from __future__ import annotations

from typing import Final

from costart.display.expected_start import NOT_WAITING
from costart.domain.states import GROUP_WAITING
from costart.projections.models import GroupDetail, GroupView
from costart.service.expected_starts import ExpectedStart

WITHOUT_SERVE: Final = "n/a (no serve)"
"""A waiting group's cell on a store read directly: only `costart serve` estimates."""
NOT_PLANNED: Final = "not planned yet"
"""A waiting group the server has no estimate for (not planned since it came)."""


class EstimatedGroup(GroupView, frozen=True, kw_only=True):
    """A group row from `costart serve`: the view row and its expected start."""

    expected_start: ExpectedStart | None = None


class EstimatedDetail(GroupDetail, frozen=True, kw_only=True):
    """`describe group` from `costart serve`: the group row carries its expected start."""

    group: EstimatedGroup


def expected_start_cell(g: GroupView, now_ns: int) -> str:
    """The EXPECTED START column: ``in 1h20m (limit)``, ``-`` when not waiting."""
    if g.state not in GROUP_WAITING:
        return NOT_WAITING
    if not isinstance(g, EstimatedGroup):
        return WITHOUT_SERVE
    e = g.expected_start
    if e is None:
        return NOT_PLANNED
    return e.cell(now_ns)


def expected_start_lines(g: GroupView, now_ns: int) -> list[str]:
    """``describe``'s lines: the point, interval and assumption; where it was planned."""
    if g.state not in GROUP_WAITING:
        return []
    label = f"{'Expected:':<12}"
    if not isinstance(g, EstimatedGroup):
        return [f"{label}n/a: only `costart serve` estimates starts (this read the store)"]
    e = g.expected_start
    if e is None:
        return [f"{label}{NOT_PLANNED}: the server has not planned since the group came"]
    return [f"{label}{e.line(now_ns)}", f"{'':<12}{e.freshness(now_ns)}"]
