"""Capacity in time: what each node offers from now on, given when its work ends.

A `CapacityProfile` is every node's capacity and the *uses* on it: intervals
``[start, end)`` of a vector, each owned by a group (``end`` None: the use does not end
within the plan, e.g. work whose runtime is unknown, or a reservation's holds). Running
work is a use from now to its expected end; a reservation planned ahead is a use from
its planned start. Use on a node only changes at the intervals' bounds, so "how much is
free on this node over ``[a, b)``" is the capacity minus the largest use at any bound in
that span. Pure: no clock, every order stable (uses are kept in the order added, and
every answer is a per-node maximum, which does not depend on that order).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple

from costart.domain import expected_runtime as runtimes
from costart.placement.capacity import ZERO, CapacityView, Vec
from costart.placement.cluster import Cluster

if TYPE_CHECKING:
    from costart.placement.planner import Demand


class Use(NamedTuple):
    """``vec`` used on one node over ``[start_ns, end_ns)``; ``end_ns`` None: without end
    in the plan. ``owner``: the group using it (its own planning does not count it).
    ``basis``: what its end rests on (`costart.domain.expected_runtime`)."""

    node: int
    vec: Vec
    start_ns: int
    end_ns: int | None
    owner: str
    basis: runtimes.Basis = "unknown"


def _covers(use: Use, at_ns: int) -> bool:
    return use.start_ns <= at_ns and (use.end_ns is None or at_ns < use.end_ns)


@dataclass
class CapacityProfile:
    """Per-node capacity (0 on nodes that are not up) and the uses planned on them.

    Each node's use over time (a step function) is made when first asked for and kept
    until that node's uses change, so the many searches of one session share it."""

    capacity: list[Vec]
    now_ns: int
    uses: list[list[Use]] = field(default_factory=list)
    _steps: dict[int, tuple[list[int], list[Vec]]] = field(default_factory=dict, repr=False)
    _bounds: list[int] | None = field(default=None, repr=False)
    _releases: list[int] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if not self.uses:
            self.uses = [[] for _ in self.capacity]

    def __len__(self) -> int:
        return len(self.capacity)

    def copy(self) -> CapacityProfile:
        return CapacityProfile(list(self.capacity), self.now_ns, [list(u) for u in self.uses])

    def _changed(self, node: int) -> None:
        self._steps.pop(node, None)
        self._bounds = self._releases = None

    def add(self, use: Use) -> None:
        """Add a use; a start before now counts from now (the past is not planned)."""
        start = max(use.start_ns, self.now_ns)
        if use.end_ns is not None and use.end_ns <= start:
            return  # ended already: it uses nothing from now on
        self.uses[use.node].append(use if use.start_ns == start else use._replace(start_ns=start))
        self._changed(use.node)

    def remove(self, owner: str) -> bool:
        """Forget every use of ``owner`` (it released or converted them); True if it
        had any."""
        found = False
        for node, node_uses in enumerate(self.uses):
            if any(u.owner == owner for u in node_uses):
                self.uses[node] = [u for u in node_uses if u.owner != owner]
                self._changed(node)
                found = True
        return found

    def add_all(self, uses: Iterable[Use]) -> None:
        """`add` each use, in order."""
        for node in sorted({u.node for u in self._append_all(uses)}):
            self._changed(node)

    def _append_all(self, uses: Iterable[Use]) -> list[Use]:
        """Append each use as `add` does, without marking its node changed: the uses
        appended (as kept)."""
        now, appended = self.now_ns, []
        for use in uses:
            start = use.start_ns if use.start_ns > now else now
            if use.end_ns is not None and use.end_ns <= start:
                continue  # ended already: it uses nothing from now on
            kept = use if use.start_ns == start else use._replace(start_ns=start)
            self.uses[use.node].append(kept)
            appended.append(kept)
        return appended

    def bounds(self, until_ns: int | None = None) -> list[int]:
        """Now and every later time at which some node's use changes (up to
        ``until_ns`` included, when given), ascending, each once."""
        if self._bounds is None:
            times = {self.now_ns}
            for node_uses in self.uses:
                for use in node_uses:
                    times.add(use.start_ns)
                    if use.end_ns is not None:
                        times.add(use.end_ns)
            self._bounds = sorted(times)
        if until_ns is None:
            return list(self._bounds)
        return self._bounds[: bisect_right(self._bounds, until_ns)]

    def releases(self, until_ns: int) -> list[int]:
        """Now and every later time up to ``until_ns`` at which some use ends: the only
        times at which a span that did not fit can start to fit (use only falls there)."""
        if self._releases is None:
            ends = {u.end_ns for us in self.uses for u in us if u.end_ns is not None}
            self._releases = sorted({self.now_ns} | ends)
        return self._releases[: bisect_right(self._releases, until_ns)]

    def held(self, owner: str) -> list[Use]:
        """``owner``'s uses without end (its holds), in node order."""
        return [u for us in self.uses for u in us if u.owner == owner and u.end_ns is None]

    def used_at(self, node: int, at_ns: int, ignore: str | None = None) -> Vec:
        g = c = m = 0
        for use in self.uses[node]:
            if use.owner != ignore and _covers(use, at_ns):
                g, c, m = g + use.vec[0], c + use.vec[1], m + use.vec[2]
        return (g, c, m)

    def _steps_of(self, node: int) -> tuple[list[int], list[Vec]]:
        """The node's use as a step function: from ``times[i]`` until the next time it
        is ``levels[i]`` (the first time is now)."""
        steps = self._steps.get(node)
        if steps is None:
            node_uses = self.uses[node]
            times = sorted(
                {self.now_ns}
                | {u.start_ns for u in node_uses}
                | {u.end_ns for u in node_uses if u.end_ns is not None}
            )
            steps = (times, [self.used_at(node, t) for t in times])
            self._steps[node] = steps
        return steps

    def peak(self, node: int, start_ns: int, end_ns: int | None, ignore: str | None = None) -> Vec:
        """The largest use of each dimension on the node at any time of
        ``[start_ns, end_ns)`` (``end_ns`` None: from ``start_ns`` on)."""
        node_uses = self.uses[node]
        if not node_uses:
            return ZERO
        if ignore is not None and any(u.owner == ignore for u in node_uses):
            return self._peak_without(node, start_ns, end_ns, ignore)
        times, levels = self._steps_of(node)
        i = max(0, bisect_right(times, start_ns) - 1)
        g, c, m = levels[i]
        for j in range(i + 1, len(times)):
            if end_ns is not None and times[j] >= end_ns:
                break
            lg, lc, lm = levels[j]
            g, c, m = max(g, lg), max(c, lc), max(m, lm)
        return (g, c, m)

    def _peak_without(self, node: int, start_ns: int, end_ns: int | None, ignore: str) -> Vec:
        node_uses = [u for u in self.uses[node] if u.owner != ignore]
        times = {start_ns}
        for use in node_uses:
            if start_ns < use.start_ns and (end_ns is None or use.start_ns < end_ns):
                times.add(use.start_ns)
        best = [0, 0, 0]
        for t in sorted(times):
            used = self.used_at(node, t, ignore)
            best = [max(best[0], used[0]), max(best[1], used[1]), max(best[2], used[2])]
        return (best[0], best[1], best[2])

    def free_over(self, start_ns: int, end_ns: int | None, ignore: str | None = None) -> list[Vec]:
        """Per node: what is free during the whole of ``[start_ns, end_ns)`` (never
        below zero), not counting ``ignore``'s own uses."""
        return [self.free_on(n, start_ns, end_ns, ignore) for n in range(len(self.capacity))]

    def free_on(self, node: int, start_ns: int, end_ns: int | None, ignore: str | None) -> Vec:
        """`free_over` of one node."""
        cap = self.capacity[node]
        p = self.peak(node, start_ns, end_ns, ignore)
        return (max(0, cap[0] - p[0]), max(0, cap[1] - p[1]), max(0, cap[2] - p[2]))

    def view(
        self, cluster: Cluster, start_ns: int, end_ns: int | None, ignore: str | None
    ) -> CapacityView:
        """What a gang search may use over ``[start_ns, end_ns)``: `free_over`."""
        return CapacityView(cluster, self.free_over(start_ns, end_ns, ignore), {})

    def cannot_fit(
        self, demands: Sequence[Demand], start_ns: int, end_ns: int | None, ignore: str | None
    ) -> bool:
        """True only if ``demands`` surely do not fit over ``[start_ns, end_ns)``
        whatever the search (a quick test before it). The plain profile never knows."""
        return False

    def ruled_out(
        self,
        demands: Sequence[Demand],
        starts: Sequence[int],
        runtime_ns: int | None,
        ignore: str | None,
    ) -> list[bool]:
        """`cannot_fit` at each of ``starts`` over ``[start, start + runtime_ns)`` (from
        ``start`` on when ``runtime_ns`` is None), in the order given."""
        return [
            self.cannot_fit(demands, s, None if runtime_ns is None else s + runtime_ns, ignore)
            for s in starts
        ]

    def fits(self, uses: Sequence[Use]) -> bool:
        """Would adding ``uses`` keep every node within its capacity at every time?"""
        trial = self.copy()
        trial.add_all(uses)
        return trial.overcommitted() is None

    def overcommitted(self) -> tuple[int, int] | None:
        """The first (node, time) where the uses exceed the capacity, or None."""
        for node, cap in enumerate(self.capacity):
            node_uses = self.uses[node]
            for t in sorted({u.start_ns for u in node_uses}):
                used = self.used_at(node, t)
                if any(used[d] > cap[d] for d in range(3)):
                    return node, t
        return None
