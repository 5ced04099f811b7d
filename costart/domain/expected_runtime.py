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

This first version knows limits only; learned estimates extend `expected_runtime`
without changing its signature. Pure: every answer is a function of the arguments.
"""

from __future__ import annotations

from typing import Literal, NamedTuple

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


def expected_runtime(group: GroupSpec, member: MemberSpec) -> ExpectedRuntime:
    """A member's expected run length if it started now."""
    if member.max_runtime_ns is not None:
        return ExpectedRuntime(member.max_runtime_ns, "limit")
    return UNKNOWN_RUNTIME


def expected_end(group: GroupState, member: MemberState, now_ns: int) -> ExpectedEnd:
    """When a placed or running member is expected to end, counted from its start (a
    member placed but not started counts from ``now_ns``)."""
    runtime = expected_runtime(group.spec, member.spec)
    if runtime.runtime_ns is None:
        return UNKNOWN_END
    began = member.started_at_ns if member.started_at_ns is not None else now_ns
    return ExpectedEnd(max(now_ns, began + runtime.runtime_ns), runtime.basis)
