"""Run lengths at a quantile of what the log has learned: what the expected start and
its interval plan with (issue 36, ADR 0138).

The plan-ahead decisions rest on `costart.domain.expected_runtime` (a declared limit
first: a promise the run is stopped at). An *estimate* of when a group starts wants the
likely run instead: users declare limits well above their runs, so a plan over limits
puts every start late. `LearnedRuntimes` answers at one nearest-rank ``percentile`` of
the learned samples (the median for the point, a low and a high one for the interval):

- samples: the member's own key's (`runtime_key`) when it has at least `MIN_SAMPLES`,
  else those of every key of the same owner and member name (the user's other
  workloads: Tsafrir, Etsion and Feitelson predict from a user's recent jobs), when
  those pool to at least `MIN_SAMPLES`;
- a running member that has run ``e`` already is answered from the samples longer than
  ``e`` (its run is at least that long); none longer: its limit if it has one, else it
  has slipped past all of them (`slipped_runtime`);
- every answer is capped at the declared limit (the run is stopped there);
- no samples: the declared limit (``limit``), else unknown.

Pure: a function of (history, percentile) and its arguments; stable orders.
"""

from __future__ import annotations

from costart.domain import expected_runtime as runtimes
from costart.domain.runtime_history import (
    MIN_SAMPLES,
    RuntimeHistory,
    nearest_rank,
    runtime_key,
    slipped_runtime,
)
from costart.domain.spec_types import GroupSpec, MemberSpec
from costart.domain.states import GroupState, MemberState


def _owner_and_member(key: str) -> tuple[str, str]:
    """A key's owner and member name (its first and last space-separated parts)."""
    parts = key.split(" ")
    return parts[0], parts[-1]


class LearnedRuntimes:
    """Members' runs at the ``percentile`` (1..100) of the learned samples; see the
    module. Built once per estimate over one history: the pooled samples per owner and
    member name are gathered once (keys in the history's order, so pools are stable)."""

    def __init__(self, history: RuntimeHistory, percentile: int) -> None:
        if not 1 <= percentile <= 100:
            raise ValueError(f"percentile {percentile} is not within 1..100")
        self.history = history
        self.percentile = percentile
        pools: dict[tuple[str, str], list[int]] = {}
        for key, entry in history.keys.items():
            pools.setdefault(_owner_and_member(key), []).extend(entry.samples)
        self._pools = pools

    def samples(self, group: GroupSpec, member: MemberSpec) -> list[int]:
        """The samples the member's runs are answered from (empty: too few known)."""
        key = runtime_key(group, member)
        own = self.history.samples(key)
        if len(own) >= MIN_SAMPLES:
            return own
        pooled = self._pools.get(_owner_and_member(key), [])
        return pooled if len(pooled) >= MIN_SAMPLES else []

    def runtime(self, group: GroupSpec, member: MemberSpec) -> runtimes.ExpectedRuntime:
        """The member's run length if it started now."""
        limit = member.max_runtime_ns
        samples = self.samples(group, member)
        if samples:
            value = nearest_rank(samples, self.percentile)
            if limit is not None and value >= limit:
                return runtimes.ExpectedRuntime(limit, "limit")
            return runtimes.ExpectedRuntime(value, "estimate")
        if limit is not None:
            return runtimes.ExpectedRuntime(limit, "limit")
        return runtimes.UNKNOWN_RUNTIME

    def end(self, group: GroupState, member: MemberState, now_ns: int) -> runtimes.ExpectedEnd:
        """When a placed or running member ends (a member placed but not started counts
        from ``now_ns``), never before ``now_ns``."""
        began = member.started_at_ns
        if began is None:
            runtime = self.runtime(group.spec, member.spec)
            if runtime.runtime_ns is None:
                return runtimes.UNKNOWN_END
            return runtimes.ExpectedEnd(now_ns + runtime.runtime_ns, runtime.basis)
        limit = member.spec.max_runtime_ns
        elapsed = now_ns - began
        samples = self.samples(group.spec, member.spec)
        if not samples:
            if limit is None:
                return runtimes.UNKNOWN_END
            return runtimes.ExpectedEnd(max(now_ns, began + limit), "limit")
        longer = [s for s in samples if s > elapsed]
        if longer:
            value = nearest_rank(longer, self.percentile)
        elif limit is not None:
            value = limit
        else:
            value = slipped_runtime(samples, elapsed)
        if limit is not None and value >= limit:
            return runtimes.ExpectedEnd(max(now_ns, began + limit), "limit")
        return runtimes.ExpectedEnd(max(now_ns, began + value), "estimate")
