"""The waiting groups' expected starts as readers get them (issue 36, ADR 0137): one
group's (`ExpectedStart`, REST's ``expected_start`` of a group row) and one plan's
(`ExpectedStarts`, ``GET /v1/expected-starts``). Made from the log and never written
to it (`costart.service.start_estimates` makes them). Structs and their words only
(`costart.display.expected_start`): the CLI decodes them without loading the planner."""

from __future__ import annotations

from typing import Annotated

import msgspec
from msgspec import Meta

from costart.display.expected_start import freshness_text, start_cell, start_line


class ExpectedStart(msgspec.Struct, frozen=True, kw_only=True):
    """A waiting group's expected start: never in the log, made from it (ADR 0137)."""

    group: Annotated[str, Meta(description="the waiting group's name")]
    start_ns: Annotated[
        int | None,
        Meta(description="the expected start, ns since the Unix epoch (null: none planned)"),
    ]
    start: Annotated[str | None, Meta(description="start_ns as RFC 3339 UTC")]
    earliest_ns: Annotated[
        int | None,
        Meta(description="the interval's low end: 1 start in 10 is earlier (null: unbounded)"),
    ]
    earliest: Annotated[str | None, Meta(description="earliest_ns as RFC 3339 UTC")]
    latest_ns: Annotated[
        int | None,
        Meta(description="the interval's high end: 1 start in 10 is later (null: unbounded)"),
    ]
    latest: Annotated[str | None, Meta(description="latest_ns as RFC 3339 UTC")]
    basis: Annotated[
        str,
        Meta(
            description="what it rests on: now (fits now), limit (declared limits of "
            "running work), estimate (learned runtime estimates), unknown (no start planned)"
        ),
    ]
    unplanned: Annotated[
        str,
        Meta(description="why no start is planned: window, depth, or empty when one is"),
    ]
    assumption: Annotated[str, Meta(description="what the estimate rests on, in words")]
    depth: Annotated[int, Meta(description="how many waiting groups the plan covered at most")]
    window_ns: Annotated[int, Meta(description="how far ahead the plan looked, ns")]
    position: Annotated[int, Meta(description="the log position it was planned at")]
    planned_at_ns: Annotated[
        int, Meta(description="the controller time it was planned at (its 'now'), ns")
    ]
    planned_at: Annotated[str, Meta(description="planned_at_ns as RFC 3339 UTC")]
    stale: Annotated[
        bool, Meta(description="true when the state has moved on and no newer plan came in time")
    ]
    stale_reason: Annotated[str | None, Meta(description="why it is stale, in words")] = None

    def cell(self, now_ns: int) -> str:
        """The short form (`start_cell`) seen at ``now_ns``: ``in 1h20m (limit)``."""
        return start_cell(
            self.start_ns, self.basis, self.unplanned, now_ns,
            depth=self.depth, window_ns=self.window_ns, stale=self.stale,
        )  # fmt: skip

    def line(self, now_ns: int) -> str:
        """The long form (`start_line`) seen at ``now_ns``: the point, its interval and
        the assumption in words."""
        return start_line(
            self.start_ns, self.earliest_ns, self.latest_ns, self.basis, self.unplanned,
            now_ns, depth=self.depth, window_ns=self.window_ns,
        )  # fmt: skip

    def freshness(self, now_ns: int) -> str:
        """Where it was planned, seen at ``now_ns`` (`freshness_text`)."""
        return freshness_text(self.position, self.planned_at_ns, now_ns, self.stale_reason)


class ExpectedStarts(msgspec.Struct, frozen=True, kw_only=True):
    """The estimator's whole answer: every waiting group's expected start, one plan."""

    available: Annotated[bool, Meta(description="false: this server makes no estimates")]
    reason: Annotated[
        str | None,
        Meta(description="why there are no estimates (when unavailable or not yet made)"),
    ] = None
    position: Annotated[int | None, Meta(description="the log position planned at")] = None
    log_position: Annotated[int, Meta(description="the log position when answered")] = 0
    planned_at_ns: Annotated[int | None, Meta(description="the controller time planned at")] = None
    planned_at: Annotated[str | None, Meta(description="planned_at_ns as RFC 3339 UTC")] = None
    took_s: Annotated[float | None, Meta(description="how long the planning took, seconds")] = None
    budget_s: Annotated[float, Meta(description="how long a planning should take at most")] = 0.0
    depth: Annotated[int, Meta(description="how many waiting groups were planned at most")] = 0
    window_ns: Annotated[int, Meta(description="how far ahead starts were planned, ns")] = 0
    stale: Annotated[bool, Meta(description="true when the state moved on past the plan")] = False
    stale_reason: Annotated[str | None, Meta(description="why it is stale, in words")] = None
    groups: Annotated[
        tuple[ExpectedStart, ...], Meta(description="each waiting group's estimate, queue order")
    ] = ()

    def of(self, name: str) -> ExpectedStart | None:
        """``name``'s estimate (None: not waiting when planned, or no estimates)."""
        for estimate in self.groups:
            if estimate.group == name:
                return estimate
        return None


def unavailable(reason: str) -> ExpectedStarts:
    return ExpectedStarts(available=False, reason=reason)
