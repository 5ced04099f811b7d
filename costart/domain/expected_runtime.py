"""How long a member's run is expected to last, and on what that rests (issue 35).

The shadow-time planner (`costart.placement.shadow`) asks two questions of running and
waiting work: when will a running member's tasks free their capacity, and would a
waiting member end before a reservation's planned start. Both answers come from here,
each with its *basis*, so a decision can say what it rested on:

- ``limit``: the member's declared ``max_runtime`` (the run is stopped there, so it is a
  promise);
- ``estimate``: a runtime learned from the log's own history of runs like it (a guess:
  a decision that rests on it states its fallback);
- ``unknown``: neither; the capacity is treated as never freeing within the plan.

Estimates come from a `RuntimeHistory` (the World's ``runtime_history``), passed as
``history``; without one, only limits are known. A run past its estimate *slips*: its
expected end moves to the next longer run seen, else to twice what it has run (ADR 0112).
A decision that rests on an answer records it as a `RuntimeEstimate` (`estimate_record`).
Pure: every answer is a function of the arguments.
"""

from __future__ import annotations

from typing import Literal, NamedTuple

from costart.domain.events import RuntimeEstimate
from costart.domain.runtime_history import (
    PERCENTILE,
    RuntimeHistory,
    runtime_key,
    slipped_runtime,
)
from costart.domain.spec_types import GroupSpec, MemberSpec
from costart.domain.states import GroupState, MemberState

Basis = Literal["limit", "estimate", "unknown"]


class ExpectedRuntime(NamedTuple):
    """A run's expected length from its start (None: unknown) and what it rests on."""

    runtime_ns: int | None
    basis: Basis


class ExpectedEnd(NamedTuple):
    """When a running member is expected to end (None: unknown) and what it rests on."""

    end_ns: int | None
    basis: Basis


UNKNOWN_RUNTIME = ExpectedRuntime(None, "unknown")
UNKNOWN_END = ExpectedEnd(None, "unknown")

__all__ = [
    "UNKNOWN_END",
    "UNKNOWN_RUNTIME",
    "Basis",
    "ExpectedEnd",
    "ExpectedRuntime",
    "RuntimeEstimate",
    "estimate_record",
    "expected_end",
    "expected_runtime",
]


def expected_runtime(
    group: GroupSpec, member: MemberSpec, history: RuntimeHistory | None = None
) -> ExpectedRuntime:
    """A member's expected run length if it started now: its declared limit first, else
    the estimate ``history`` makes for its key, else unknown."""
    if member.max_runtime_ns is not None:
        return ExpectedRuntime(member.max_runtime_ns, "limit")
    if history is not None:
        estimate = history.estimate(runtime_key(group, member))
        if estimate is not None:
            return ExpectedRuntime(estimate, "estimate")
    return UNKNOWN_RUNTIME


def expected_end(
    group: GroupState, member: MemberState, now_ns: int, history: RuntimeHistory | None = None
) -> ExpectedEnd:
    """When a placed or running member is expected to end, counted from its start (a
    member placed but not started counts from ``now_ns``). A running member that has
    run as long as its estimate or longer has slipped: its end is `slipped_runtime`
    after its start, never ``now_ns`` or before."""
    runtime = expected_runtime(group.spec, member.spec, history)
    if runtime.runtime_ns is None:
        return UNKNOWN_END
    began = member.started_at_ns
    if began is None:
        return ExpectedEnd(now_ns + runtime.runtime_ns, runtime.basis)
    if runtime.basis == "estimate" and history is not None and now_ns - began >= runtime.runtime_ns:
        samples = history.samples(runtime_key(group.spec, member.spec))
        return ExpectedEnd(began + slipped_runtime(samples, now_ns - began), "estimate")
    return ExpectedEnd(max(now_ns, began + runtime.runtime_ns), runtime.basis)


def estimate_record(
    group: GroupState,
    member: MemberState,
    now_ns: int,
    history: RuntimeHistory | None = None,
) -> RuntimeEstimate | None:
    """The record of what `expected_end` answers for ``member`` at ``now_ns`` (None:
    unknown, which no decision rests on). ``runtime_ns`` is counted from the member's
    start (from ``now_ns`` if it has not started), slip included."""
    end = expected_end(group, member, now_ns, history)
    if end.end_ns is None or end.basis == "unknown":
        return None
    began = member.started_at_ns if member.started_at_ns is not None else now_ns
    runtime_ns = end.end_ns - began
    if end.basis == "limit":
        return RuntimeEstimate(member=member.name, runtime_ns=runtime_ns, basis="limit")
    key = runtime_key(group.spec, member.spec)
    first = expected_runtime(group.spec, member.spec, history).runtime_ns
    return RuntimeEstimate(
        member=member.name,
        runtime_ns=runtime_ns,
        basis="estimate",
        samples=len(history.samples(key)) if history is not None else 0,
        percentile=PERCENTILE,
        key=key,
        slipped=first is not None and runtime_ns > first,
    )
