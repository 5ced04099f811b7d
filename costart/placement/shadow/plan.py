"""Plan the waiting queue ahead in time: each group's earliest start where its whole gang
fits, on which nodes, and on what that rests (Slurm's backfill "shadow time").

Groups are planned in the order given (the session order), each in the capacity the
profile leaves over its whole expected run — ``[T, T + runtime)``, or from ``T`` on when
its runtime is unknown — and its plan is then added to the profile, so later groups plan
around it and no node is ever planned beyond its capacity. Candidate starts lie
within ``now + window``; the gang is searched
with the same planner a session places with (`costart.placement.planner.plan_gang`).
When fitting can only get easier with time (the gang's run is unbounded, or nothing in
the profile starts later than now), the earliest fit is found by bisection over the
candidates; otherwise they are tried in order. Candidates are now and the times at which
some use ends (a span that did not fit can only start to fit where use falls), and a
gang identical in shape and runtime to one planned before in the same profile starts its
search where that one started. Only the first ``depth`` groups are
planned (Slurm's ``bf_max_job_test``); the others, and groups that fit no candidate,
have no planned start.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Hashable, Sequence
from typing import Final, Literal, NamedTuple

from costart.domain import expected_runtime as runtimes
from costart.placement.capacity import CapacityView, shape_vec
from costart.placement.cluster import Cluster
from costart.placement.constraints import Scope
from costart.placement.planner import Demand, Plan, Shortfall, plan_gang
from costart.placement.shadow.indexed import IndexedProfile
from costart.placement.shadow.profile import CapacityProfile, Use
from costart.placement.shadow.runtime import weakest

HOUR_NS: Final = 3_600_000_000_000
DEFAULT_WINDOW_NS: Final = 24 * HOUR_NS
"""How far ahead starts are planned (Slurm's ``bf_window`` default: one day)."""
DEFAULT_DEPTH: Final = 100
"""How many waiting groups are planned per session (Slurm's ``bf_max_job_test``
defaulted to 100 before 21.08; see ADR 0107)."""

PlanBasis = Literal["now", "limit", "estimate", "unknown"]
"""What a planned start rests on: it fits ``now``; it waits for work that ends by its
``limit`` or by an ``estimate``; ``unknown``: no start within the plan."""
Unplanned = Literal["", "window", "depth"]
FIRST_BATCH: Final = 8
"""Candidates ruled out in one step at first, doubling after each batch."""


class Waiting(NamedTuple):
    """One waiting group as the planner sees it."""

    name: str
    demands: Sequence[Demand]
    scopes: Sequence[Scope]
    runtime: runtimes.ExpectedRuntime
    admission: runtimes.ExpectedRuntime | None = None
    """The run its fit is checked over when it differs from ``runtime``: what the
    controller admits lower work on before a planned start (`admission`), while the
    plan holds the capacity for ``runtime`` only (None: ``runtime``)."""
    claimed_from_ns: int | None = None
    """From when later groups must keep off the capacity its plan gives it, when later
    than its planned start (`admission.claimed_from`)."""

    @property
    def checked_ns(self) -> int | None:
        """How long the gang must fit from a candidate start (None: from it on)."""
        run = self.runtime.runtime_ns
        if self.admission is None or run is None:
            return run
        admitted = self.admission.runtime_ns
        return None if admitted is None else max(run, admitted)


class PlannedStart(NamedTuple):
    """A group's planned start (None: none within the plan, ``unplanned`` says why:
    no fit within the ``window``, or beyond the ``depth``), its nodes then (node indexes
    per member, as `Plan.nodes`), its expected end, and the plan's basis."""

    name: str
    start_ns: int | None
    nodes: dict[str, list[int]]
    end_ns: int | None
    basis: PlanBasis
    unplanned: Unplanned = ""


PlanFn = Callable[
    [Sequence[Demand], Sequence[Scope], CapacityView, CapacityView | None], Plan | Shortfall
]


class ShadowPlanner:
    """Plans waiting groups one at a time, in order, over a profile it adds each plan to.
    A session interleaves it with its own decisions (`add` records work it placed)."""

    def __init__(
        self,
        cluster: Cluster,
        profile: CapacityProfile,
        *,
        depth: int = DEFAULT_DEPTH,
        window_ns: int = DEFAULT_WINDOW_NS,
        plan: PlanFn | None = None,
    ) -> None:
        if depth < 0 or window_ns < 0:
            raise ValueError("depth and window must not be negative")
        self.cluster = cluster
        self.profile = profile
        self.depth = depth
        self.window_ns = window_ns
        self._plan: PlanFn = plan or (lambda d, s, v, p: plan_gang(cluster, d, s, v, p))
        self.planned = 0
        self.starts: dict[str, PlannedStart] = {}
        # Per gang shape (demands without names, no scopes, no holds, runtime): where the
        # last such gang started. The profile only gains uses between plans (until
        # `remove`), so an identical gang cannot start earlier: its search starts there.
        self._floor: dict[Hashable, int] = {}

    @property
    def now_ns(self) -> int:
        return self.profile.now_ns

    def add(self, uses: Sequence[Use]) -> None:
        """Work started outside the plan (placed this session): later plans see it."""
        self.profile.add_all(uses)

    def remove(self, owner: str) -> None:
        """``owner`` released or converted its uses: capacity may free earlier."""
        if self.profile.remove(owner):
            self._floor.clear()

    def plan(self, group: Waiting, prefer: CapacityView | None = None) -> PlannedStart:
        """The group's earliest start within the window, reserved in the profile.
        ``prefer``: capacity whose nodes the gang search prefers at every candidate time
        (a session passes what is free now, so the plan keeps the nodes already free and
        does not leave them to lower work while it waits for others)."""
        if self.planned >= self.depth:
            return self._record(PlannedStart(group.name, None, {}, None, "unknown", "depth"))
        self.planned += 1
        found = self._earliest(group, prefer)
        if found is None:
            return self._record(PlannedStart(group.name, None, {}, None, "unknown", "window"))
        start, plan = found
        self._held_until(group.name, start)
        key = _shape_key(group)
        if key is not None:
            self._floor[key] = start
        runtime = group.runtime.runtime_ns
        end = None if runtime is None else start + runtime
        basis = self._basis(group.name, plan, start)
        by_member = {d.member: d for d in group.demands}
        claimed = start if group.claimed_from_ns is None else max(start, group.claimed_from_ns)
        uses = []
        for member, nodes in sorted(plan.nodes.items()):
            vec = shape_vec(by_member[member].shape)
            uses += [
                Use(node, vec, claimed, end, group.name, group.runtime.basis) for node in nodes
            ]
        self.profile.add_all(uses)
        return self._record(PlannedStart(group.name, start, plan.nodes, end, basis))

    def _held_until(self, name: str, start_ns: int) -> None:
        """The group's holds (uses without end) are its own capacity until its planned
        start, and its plan's from then on: they end at the start, as `held_until`."""
        profile = self.profile
        held = profile.held(name)
        if not held:
            return
        profile.remove(name)
        for use in held:
            profile.add(use._replace(end_ns=start_ns, owner=held_until(name)))

    def _record(self, start: PlannedStart) -> PlannedStart:
        self.starts[start.name] = start
        return start

    def _view(self, group: Waiting, start_ns: int) -> CapacityView:
        runtime = group.checked_ns
        end = None if runtime is None else start_ns + runtime
        return self.profile.view(self.cluster, start_ns, end, group.name)

    def _fit(self, group: Waiting, start_ns: int, prefer: CapacityView | None) -> Plan | None:
        runtime = group.checked_ns
        if self.profile.ruled_out(group.demands, [start_ns], runtime, group.name)[0]:
            return None
        return self._search(group, start_ns, prefer)

    def _search(self, group: Waiting, start_ns: int, prefer: CapacityView | None) -> Plan | None:
        """The gang search at ``start_ns`` (not ruled out first)."""
        result = self._plan(group.demands, group.scopes, self._view(group, start_ns), prefer)
        return result if isinstance(result, Plan) else None

    def _earliest(self, group: Waiting, prefer: CapacityView | None) -> tuple[int, Plan] | None:
        times = self.profile.releases(self.now_ns + self.window_ns)
        key = _shape_key(group)
        floor = self._floor.get(key) if key is not None else None
        if floor is not None:
            times = times[bisect_left(times, floor) :] or [floor]
        if not self._monotone(group):
            # Rule out candidates a batch at a time (most cannot fit), growing batches:
            # the profile does not change during the search, so this is `_fit` in order.
            runtime, size, i = group.checked_ns, FIRST_BATCH, 0
            while i < len(times):
                batch = times[i : i + size]
                ruled_out = self.profile.ruled_out(group.demands, batch, runtime, group.name)
                for t, out in zip(batch, ruled_out, strict=True):
                    plan = None if out else self._search(group, t, prefer)
                    if plan is not None:
                        return t, plan
                i, size = i + size, 2 * size
            return None
        last = self._fit(group, times[-1], prefer)
        if last is None:
            return None
        lo, hi, best = 0, len(times) - 1, (times[-1], last)
        while lo < hi:  # invariant: the gang fits at times[hi] (plan in best)
            mid = (lo + hi) // 2
            plan = self._fit(group, times[mid], prefer)
            if plan is None:
                lo = mid + 1
            else:
                hi, best = mid, (times[mid], plan)
        return best

    def _monotone(self, group: Waiting) -> bool:
        """Does fitting only get easier with time? Yes when the gang's run is unbounded
        (the capacity free from T on can only grow with T) or when no use starts after
        now (use only falls as work ends)."""
        if group.checked_ns is None:
            return True
        now = self.now_ns
        return all(u.start_ns <= now for node in self.profile.uses for u in node)

    def _basis(self, name: str, plan: Plan, start_ns: int) -> PlanBasis:
        """``now`` if it starts now; else the weakest basis of the ends it waits for on
        its nodes (uses of others ending in ``(now, start]``)."""
        if start_ns <= self.now_ns:
            return "now"
        basis: runtimes.Basis = "limit"
        own = (name, held_until(name))
        nodes = sorted({n for ns in plan.nodes.values() for n in ns})
        for node in nodes:
            for use in self.profile.uses[node]:
                if use.owner in own or use.end_ns is None:
                    continue
                if self.now_ns < use.end_ns <= start_ns:
                    basis = weakest(basis, use.basis)
        return basis


def held_until(name: str) -> str:
    """The owner of a planned group's holds until its start (no group name holds NUL):
    a borrower of that group may use them before the start (`admits`' ``lender``)."""
    return f"{name}\0held"


def _shape_key(group: Waiting) -> Hashable | None:
    """What a gang's earliest start depends on besides the profile, when that is only
    its shapes and runtime (no scopes, no held tasks); else None."""
    if group.scopes or any(d.fixed for d in group.demands):
        return None
    shapes = tuple((d.shape, d.need, d.extra) for d in group.demands)
    return (shapes, group.runtime.runtime_ns, group.checked_ns)


def plan_queue(
    cluster: Cluster,
    profile: CapacityProfile,
    queue: Sequence[Waiting],
    *,
    depth: int = DEFAULT_DEPTH,
    window_ns: int = DEFAULT_WINDOW_NS,
) -> ShadowPlanner:
    """Plan ``queue`` in its order over a copy of ``profile``; the planner holds each
    group's `PlannedStart` (``starts``) and the profile with every plan in it."""
    indexed = IndexedProfile.of(profile)
    planner = ShadowPlanner(cluster, indexed, depth=depth, window_ns=window_ns)
    for group in queue:
        planner.plan(group)
    return planner
