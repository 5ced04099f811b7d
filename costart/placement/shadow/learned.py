"""Run lengths at a quantile of what the log has learned: what the expected start and
its interval plan with (issue 36, ADR 0138).

The plan-ahead decisions rest on `costart.domain.expected_runtime` (a declared limit
first: a promise the run is stopped at). An *estimate* of when a group starts wants the
likely run instead: users declare limits well above their runs, so a plan over limits
puts every start late. `LearnedRuntimes` answers at one ``level`` (0.5 for the point,
0.1 and 0.9 for the interval) from the learned samples:

- samples: the member's own key's (`runtime_key`) when it has at least `MIN_SAMPLES`,
  else those of every key of the same owner and member name (the user's other
  workloads: Tsafrir, Etsion and Feitelson predict from a user's recent jobs), when
  those pool to at least `MIN_SAMPLES`; a member that declares no limit and has
  neither: every learned run (a run like the cluster's is likelier than one that never
  ends, which is what unknown plans);
- a waiting member runs the ``level`` quantile of its samples;
- a running (or placed) member that has run ``e`` is answered from its samples longer
  than ``e`` (its run is at least that long); none longer: its limit if it has one,
  else it has slipped past all of them (`slipped_runtime`). The n running members
  answered from one set of samples do not each end at the ``level`` quantile: the
  first of them to end ends much earlier (`order_stats`). Ranked by their median end,
  the i-th is answered at the ``level`` quantile of the i-th of n ends;
- a member that declares a limit and has neither: the runs of the key, else of the
  owner, else of the whole cluster, as the shares of their limits that ended runs held
  (`LimitShares`, when given), applied to its own limit;
- every answer is capped at the declared limit (the run is stopped there);
- every estimate (not a limit) is rounded up onto a grid no coarser than a twentieth of it
  (`on_grid`): the plan tries a start at each distinct end, and runs learned to the
  second would each bring their own; a run left ``r`` to go ends at most ``r / 20``
  later (a minute at least) — within the interval's spread by far;
- no samples: the declared limit (``limit``); without one, a member that has run ``e``
  runs on as runs of unknown length do (Gott's Copernican argument, the heavy tail of
  run lengths Harchol-Balter and Downey measured: P(run > t | run > e) = e / t), so at
  ``level`` it runs ``e / (1 - level)`` in all (twice what it has run at the median:
  the slip of ADR 0112); one that has not started is unknown.

Pure: a function of (history, level, the live groups, now) and its arguments; every
order is stable (ties between members broken by group and member name).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from typing import Final

from costart.domain import expected_runtime as runtimes
from costart.domain import runtime_history as learned_runs
from costart.domain.runtime_history import RuntimeHistory
from costart.domain.spec_types import GroupSpec, MemberSpec
from costart.domain.states import GroupState, MemberState
from costart.placement.shadow.limit_shares import LimitShares
from costart.placement.shadow.order_stats import rank_quantile, sorted_quantile

Live = Sequence[tuple[GroupState, Sequence[MemberState]]]
Source = tuple[str, ...]
"""Where a member's samples come from: ("key", key), ("pool", owner, member), a
`LimitShares` scope with the limit, ("all",) or ("none",)."""


def _owner_and_member(key: str) -> tuple[str, str]:
    """A key's owner and member name (its first and last space-separated parts)."""
    parts = key.split(" ")
    return parts[0], parts[-1]


class LearnedRuntimes:
    """Members' runs at ``level`` (0 < level < 1) of the learned samples; see the
    module. ``live`` and ``now_ns``: the running members to rank against each other
    (none: each answered at ``level`` alone). ``unlimited``: members that declare no
    limit and have no samples of their own or their owner's are answered from every
    learned run, else by how long they have run (False: unknown, as Slurm plans them).
    ``grid``: every answer is rounded up onto `on_grid`'s times (False: exact).
    ``shares``: how far ended runs fell below their limits, for limited members with
    no samples of their own or their owner's (None: they run their limit).
    Built once per plan: the pools are gathered once, in the history's key order."""

    def __init__(
        self,
        history: RuntimeHistory,
        level: float,
        live: Live = (),
        now_ns: int = 0,
        *,
        unlimited: bool = True,
        grid: bool = True,
        shares: LimitShares | None = None,
    ) -> None:
        if not 0 < level < 1:
            raise ValueError(f"level {level} is not within (0, 1)")
        self.history = history
        self.level = level
        pools: dict[tuple[str, str], list[int]] = {}
        for key, entry in history.keys.items():
            pools.setdefault(_owner_and_member(key), []).extend(entry.samples)
        self._pools = pools
        self._all = [s for entry in history.keys.values() for s in entry.samples]
        self.unlimited = unlimited
        self.grid = grid
        self.shares = shares
        self._sorted: dict[Source, tuple[list[int], int]] = {}
        self._ranked: dict[tuple[str, str], float] = self._rank(live, now_ns)

    def source(self, group: GroupSpec, member: MemberSpec) -> tuple[Source, list[int]]:
        """Where the member's runs are answered from, and those samples (empty: too
        few known)."""
        key = learned_runs.runtime_key(group, member)
        own = self.history.samples(key)
        if len(own) >= learned_runs.MIN_SAMPLES:
            return ("key", key), own
        owner, name = _owner_and_member(key)
        pooled = self._pools.get((owner, name), [])
        if len(pooled) >= learned_runs.MIN_SAMPLES:
            return ("pool", owner, name), pooled
        if self.shares is not None:
            shared = self.shares.samples(group, member)
            if shared is not None:
                return shared
        if (
            self.unlimited
            and member.max_runtime_ns is None
            and len(self._all) >= learned_runs.MIN_SAMPLES
        ):
            return ("all",), self._all
        return ("none",), []

    def runtime(self, group: GroupSpec, member: MemberSpec) -> runtimes.ExpectedRuntime:
        """The member's run length if it started now."""
        source, samples = self.source(group, member)
        runtime = self._capped(member, self._ordered(source, samples)[1] if samples else None)
        if not self.grid or runtime.runtime_ns is None or runtime.basis == "limit":
            return runtime
        return runtime._replace(runtime_ns=on_grid(runtime.runtime_ns))

    def end(self, group: GroupState, member: MemberState, now_ns: int) -> runtimes.ExpectedEnd:
        """When a placed or running member ends (a member placed but not started counts
        from ``now_ns``), never before ``now_ns``."""
        began = member.started_at_ns if member.started_at_ns is not None else now_ns
        level = self._ranked.get((group.name, member.name), self.level)
        runtime = self._capped(member.spec, self._after(group, member, now_ns - began, level))
        if runtime.runtime_ns is None:
            return runtimes.UNKNOWN_END
        left = max(0, began + runtime.runtime_ns - now_ns)
        if self.grid and runtime.basis == "estimate":
            left = on_grid(left)
        return runtimes.ExpectedEnd(now_ns + left, runtime.basis)

    def _after(
        self, group: GroupState, member: MemberState, elapsed: int, level: float
    ) -> int | None:
        """The ``level`` quantile of the run of a member that has run ``elapsed``
        (None: no samples; its limit when it outran them all)."""
        source, samples = self.source(group.spec, member.spec)
        if not samples:
            if self.unlimited and member.spec.max_runtime_ns is None and elapsed > 0:
                return lindy(elapsed, level)
            return None
        ordered = self._ordered(source, samples)[0]
        longer = ordered[bisect_right(ordered, elapsed) :]
        if longer:
            return sorted_quantile(longer, level)
        limit = member.spec.max_runtime_ns
        return limit if limit is not None else learned_runs.slipped_runtime(samples, elapsed)

    def _ordered(self, source: Source, samples: list[int]) -> tuple[list[int], int]:
        """The source's samples in ascending order and their ``level`` quantile, made
        once per source (a plan asks for the same sources again and again)."""
        known = self._sorted.get(source)
        if known is None:
            ordered = sorted(samples)
            known = self._sorted[source] = (ordered, sorted_quantile(ordered, self.level))
        return known

    @staticmethod
    def _capped(member: MemberSpec, value: int | None) -> runtimes.ExpectedRuntime:
        limit = member.max_runtime_ns
        if value is None or (limit is not None and value >= limit):
            return (
                runtimes.UNKNOWN_RUNTIME
                if limit is None
                else runtimes.ExpectedRuntime(limit, "limit")
            )
        return runtimes.ExpectedRuntime(value, "estimate")

    def _rank(self, live: Live, now_ns: int) -> dict[tuple[str, str], float]:
        """Each placed or running member with samples: the level its end is answered
        at, as the i-th of the n members of its source to end (by median end)."""
        by_source: dict[Source, list[tuple[int, str, str]]] = {}
        for group, members in live:
            for member in members:
                if not member.assignments:
                    continue
                source, samples = self.source(group.spec, member.spec)
                if not samples:
                    continue
                began = member.started_at_ns if member.started_at_ns is not None else now_ns
                median = self._after(group, member, now_ns - began, 0.5)
                assert median is not None
                by_source.setdefault(source, []).append((began + median, group.name, member.name))
        levels: dict[tuple[str, str], float] = {}
        for ends in by_source.values():
            ends.sort()
            n = len(ends)
            for i, (_, group_name, member_name) in enumerate(ends, start=1):
                levels[(group_name, member_name)] = rank_quantile(i, n, self.level)
        return levels


GRID_STEP_NS: Final = 60 * 10**9
"""The finest grid step, up to 20 minutes; it doubles with each doubling beyond."""


def on_grid(duration_ns: int) -> int:
    """``duration_ns`` rounded up to a multiple of its step: a minute up to 20 minutes,
    two up to 40, four up to 80, ... (never more than 1/20 of it; 0 stays 0)."""
    if duration_ns <= 0:
        return 0
    step = GRID_STEP_NS
    while duration_ns > 20 * step:
        step *= 2
    return -(-duration_ns // step) * step


def lindy(elapsed_ns: int, level: float) -> int:
    """The ``level`` quantile of the whole run of a run of unknown length that has run
    ``elapsed_ns``: P(run > t | run > e) = e / t, so t = e / (1 - level)."""
    return max(elapsed_ns + 1, round(elapsed_ns / (1 - level)))
