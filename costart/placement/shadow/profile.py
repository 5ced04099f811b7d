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

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from costart.domain.expected_runtime import Basis
from costart.placement.capacity import ZERO, Vec


class Use(NamedTuple):
    """``vec`` used on one node over ``[start_ns, end_ns)``; ``end_ns`` None: without end
    in the plan. ``owner``: the group using it (its own planning does not count it).
    ``basis``: what its end rests on (`costart.domain.expected_runtime`)."""

    node: int
    vec: Vec
    start_ns: int
    end_ns: int | None
    owner: str
    basis: Basis = "unknown"


def _covers(use: Use, at_ns: int) -> bool:
    return use.start_ns <= at_ns and (use.end_ns is None or at_ns < use.end_ns)


@dataclass
class CapacityProfile:
    """Per-node capacity (0 on nodes that are not up) and the uses planned on them."""

    capacity: list[Vec]
    now_ns: int
    uses: list[list[Use]] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.uses:
            self.uses = [[] for _ in self.capacity]

    def __len__(self) -> int:
        return len(self.capacity)

    def copy(self) -> CapacityProfile:
        return CapacityProfile(list(self.capacity), self.now_ns, [list(u) for u in self.uses])

    def add(self, use: Use) -> None:
        """Add a use; a start before now counts from now (the past is not planned)."""
        start = max(use.start_ns, self.now_ns)
        if use.end_ns is not None and use.end_ns <= start:
            return  # ended already: it uses nothing from now on
        self.uses[use.node].append(use._replace(start_ns=start))

    def remove(self, owner: str) -> None:
        """Forget every use of ``owner`` (it released or converted them)."""
        for node, node_uses in enumerate(self.uses):
            if any(u.owner == owner for u in node_uses):
                self.uses[node] = [u for u in node_uses if u.owner != owner]

    def add_all(self, uses: Iterable[Use]) -> None:
        for use in uses:
            self.add(use)

    def bounds(self, until_ns: int | None = None) -> list[int]:
        """Now and every later time at which some node's use changes (up to
        ``until_ns`` included, when given), ascending, each once."""
        times = {self.now_ns}
        for node_uses in self.uses:
            for use in node_uses:
                for t in (use.start_ns, use.end_ns):
                    if t is not None and t > self.now_ns and (until_ns is None or t <= until_ns):
                        times.add(t)
        return sorted(times)

    def used_at(self, node: int, at_ns: int, ignore: str | None = None) -> Vec:
        g = c = m = 0
        for use in self.uses[node]:
            if use.owner != ignore and _covers(use, at_ns):
                g, c, m = g + use.vec[0], c + use.vec[1], m + use.vec[2]
        return (g, c, m)

    def peak(self, node: int, start_ns: int, end_ns: int | None, ignore: str | None = None) -> Vec:
        """The largest use of each dimension on the node at any time of
        ``[start_ns, end_ns)`` (``end_ns`` None: from ``start_ns`` on)."""
        node_uses = [u for u in self.uses[node] if u.owner != ignore]
        if not node_uses:
            return ZERO
        times = {start_ns}
        for use in node_uses:
            if start_ns < use.start_ns and (end_ns is None or use.start_ns < end_ns):
                times.add(use.start_ns)
        best = [0, 0, 0]
        for t in sorted(times):
            g = c = m = 0
            for use in node_uses:
                if _covers(use, t):
                    g, c, m = g + use.vec[0], c + use.vec[1], m + use.vec[2]
            best = [max(best[0], g), max(best[1], c), max(best[2], m)]
        return (best[0], best[1], best[2])

    def free_over(self, start_ns: int, end_ns: int | None, ignore: str | None = None) -> list[Vec]:
        """Per node: what is free during the whole of ``[start_ns, end_ns)`` (never
        below zero), not counting ``ignore``'s own uses."""
        out: list[Vec] = []
        for node, cap in enumerate(self.capacity):
            p = self.peak(node, start_ns, end_ns, ignore)
            out.append((max(0, cap[0] - p[0]), max(0, cap[1] - p[1]), max(0, cap[2] - p[2])))
        return out

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
