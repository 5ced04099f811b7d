"""The ``plan-ahead`` placement mode's half of a session: the shadow plan (ADR 0108).

A ``plan-ahead`` group whose gang does not fit now is planned in capacity-in-time
(`costart.placement.shadow`): its earliest start T, its nodes then, and the basis of the
plan. With a planned start it *claims* those nodes' capacity for the rest of the
session — no lower group takes it — and lends it (as a `reserve-backfill` reservation
does, ADR 0045) to lower work the shadow plan admits: work that ends by its declared
limit, or by its runtime estimate learned from the log (then it may be stopped once the
estimate has run out, ADR 0121), before every planned start whose capacity it uses, or
that uses only capacity no plan needs. It holds nothing while it has a plan; where it cannot plan (some work on
the nodes it needs has no known end, or no start within the window) it reserves as
``reserve`` does, holding capacity as it frees.

The session keeps the profile current: every placement, hold, release and preemption
decided so far this session is added to it (`note`), so each later plan sees them.
Everything here is a function of the World, the order, the free capacity and the time.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Final

import msgspec

from costart.domain import decisions as dec
from costart.domain import expected_runtime as runtimes
from costart.domain.events import Assignment, PendReason
from costart.domain.runtime_history import RuntimeHistory
from costart.domain.spec_types import GroupSpec
from costart.domain.states import GROUP_WAITING, GroupState, MemberState
from costart.placement.backfill import Admitted
from costart.placement.capacity import CapacityView, NodeVecs, Vec, add_vecs, shape_vec
from costart.placement.cluster import Cluster
from costart.placement.constraints import Scope
from costart.placement.inputs import PlanGang
from costart.placement.planner import Demand, Plan
from costart.placement.shadow import (
    PlannedStart,
    ShadowPlanner,
    Use,
    Waiting,
    admits,
    gang_runtime,
    profile_of,
)

PLAN_AHEAD: Final = "plan-ahead"
MINUTE_NS: Final = 60_000_000_000
STEADY_NS: Final = 5 * MINUTE_NS
"""A planned start that moves less than this (or less than a tenth of the time left
until it) is not recorded again: the pend reason keeps the start it has (ADR 0108)."""

LOWER_SCAN: Final = 100
"""At most this many lower waiting groups are asked whether they would take a plan's
free capacity (`ShadowSession.contested`); Slurm's ``bf_max_job_test`` default, as the
planner's depth. Beyond it a plan holds as if contested."""

Order = Sequence[tuple[GroupState, Sequence[MemberState]]]
FitsNow = Callable[[GroupState, Sequence[MemberState]], bool]
"""Would this waiting group's gang fit now, in free capacity outside the claims so far?"""


def preemptible_only(
    group: GroupState, members: Sequence[MemberState], plan: Plan
) -> Admitted | None:
    """What a ``plan-ahead`` group that reserves (ADR 0122) lends to: only work whose
    every member is ``preemptible``, which it takes back the session its gang fits (ADR
    0045). Work admitted on a declared limit could run past the moment the gang fits and
    keep it waiting (what ``reserve-backfill`` does on the half-partition workload), so
    it is not admitted there."""
    if all(m.preemptible for m in group.spec.members):
        return Admitted()
    return None


def plans_ahead(order: Order) -> bool:
    """Does any waiting group of the session plan ahead?"""
    return any(g.status in GROUP_WAITING and g.spec.placement.mode == PLAN_AHEAD for g, _ in order)


class ShadowSession:
    """One session's shadow plan over the profile of the cluster as it was at its start."""

    def __init__(
        self,
        cluster: Cluster,
        order: Order,
        now_ns: int,
        free: Sequence[Vec],
        plan: PlanGang,
        history: RuntimeHistory | None = None,
    ) -> None:
        self.cluster = cluster
        self.history = history
        self.now_ns = now_ns
        self.order = order
        self._shortest_after: dict[str, int | None] | None = None
        self.planner = ShadowPlanner(
            cluster,
            profile_of(cluster, order, now_ns, free, history),
            plan=plan,
        )

    # --- plans ------------------------------------------------------------------------

    def plan(
        self,
        group: GroupState,
        demands: Sequence[Demand],
        scopes: Sequence[Scope],
        prefer: CapacityView | None,
    ) -> PlannedStart:
        """The group's planned start, reserved in the profile for later groups."""
        waiting = Waiting(group.name, demands, scopes, gang_runtime(group.spec, self.history))
        return self.planner.plan(waiting, prefer)

    def admits(
        self, lender: str, group: GroupState, members: Sequence[MemberState], plan: Plan
    ) -> Admitted | None:
        """May the group start now on ``plan`` (capacity ``lender`` lends) without
        delaying any planned start, by its declared limits or by the runtime estimates
        learned from the log? How (None: not admitted). One admitted on an estimate is
        admitted until now plus that estimate, and records what it rested on: from then
        on a reservation may stop it (ADR 0121). Unknown runtimes admit nothing."""
        runtime = gang_runtime(group.spec, self.history)
        if runtime.basis == "unknown":
            return None
        uses: NodeVecs = {}
        for member in members:
            vec = shape_vec(member.spec.shape)
            for node in plan.nodes.get(member.name, []):
                add_vecs(uses, node, vec)
        admission = admits(self.planner.profile, uses, runtime, lender)
        if admission is None:
            return None
        if runtime.basis == "limit":
            return Admitted()
        records = (runtimes.estimate_record(group, m, self.now_ns, self.history) for m in members)
        return Admitted(admission.until_ns, tuple(r for r in records if r is not None))

    def nothing_lower_ends_by(self, group: GroupState, start_ns: int) -> bool:
        """Could no waiting group after ``group`` in the order, started now, end by its
        declared limits or runtime estimates before ``start_ns``? (Then nothing can
        borrow the plan's free capacity in time.)"""
        shortest = self._shortest_lower().get(group.name)
        return shortest is None or self.now_ns + shortest > start_ns

    def contested(self, group: GroupState, fits_now: FitsNow) -> bool:
        """Would lower work take the free capacity ``group``'s plan waits on, were it not
        held? Only then is holding it worth its idle GPU-hours (ADR 0122): a hold that
        denies nobody does not make the gang start sooner — the plan's claims already
        keep every lower group of the session off it — and is pure waste. True when some
        waiting group after ``group`` in the order, not backing off, fits now (``fits_now``:
        in the capacity free outside the claims decided so far, which ``group``'s are
        not yet), or when more than `LOWER_SCAN` lower groups wait. A lower group that
        fits elsewhere counts too: it takes capacity, and the next one may need the
        plan's (erring toward holding, as ``reserve`` does). Asked in order, answered at
        the first that fits."""
        after = False
        asked = 0
        for other, members in self.order:
            if not after:
                after = other.name == group.name
                continue
            if other.status not in GROUP_WAITING:
                continue
            if other.status == "PENDING" and self.now_ns < other.retry_at_ns:
                continue  # backing off: it takes nothing this session
            if asked == LOWER_SCAN:
                return True
            asked += 1
            if fits_now(other, members):
                return True
        return False

    def _shortest_lower(self) -> dict[str, int | None]:
        """Per group of the order: the shortest known gang runtime (by limits or
        estimates) among the waiting groups after it (None: none is known), made once
        per session."""
        if self._shortest_after is None:
            out: dict[str, int | None] = {}
            shortest: int | None = None
            for group, _ in reversed(self.order):
                out[group.name] = shortest
                if group.status not in GROUP_WAITING:
                    continue
                known = gang_runtime(group.spec, self.history).runtime_ns
                if known is not None and (shortest is None or known < shortest):
                    shortest = known
            self._shortest_after = out
        return self._shortest_after

    def with_planned_start(self, group: GroupState, fresh: PendReason) -> PendReason:
        """A reserving ``plan-ahead`` group's pend reason with the start its shadow plan
        found this session, if any (ADR 0122: it reserves while nothing lower could use
        its plan in time, and still says when it expects to start), kept steady as
        `reason` keeps it."""
        planned = self.planner.starts.get(group.name)
        if planned is None or planned.start_ns is None:
            return fresh
        with_start = msgspec.structs.replace(
            fresh, planned_start_ns=planned.start_ns, planned_basis=planned.basis
        )
        return self.reason(group, with_start)

    def reason(self, group: GroupState, fresh: PendReason) -> PendReason:
        """``fresh``, or the group's recorded reason when only the planned start moved,
        and by less than `STEADY_NS` or a tenth of the time left until it: a start
        re-planned every session is not written to the log every session."""
        old = group.pend_reason
        if old is None or old.planned_start_ns is None or fresh.planned_start_ns is None:
            return fresh
        if msgspec.structs.replace(fresh, planned_start_ns=old.planned_start_ns) != old:
            return fresh
        slack = max(STEADY_NS, (old.planned_start_ns - self.now_ns) // 10)
        return old if abs(fresh.planned_start_ns - old.planned_start_ns) <= slack else fresh

    # --- what the session decided -----------------------------------------------------

    def note(self, decisions: Sequence[dec.Decision], groups: Mapping[str, GroupState]) -> None:
        """Keep the profile current with decisions made this session (in order)."""
        for d in decisions:
            if isinstance(d, dec.PlaceGroup | dec.PlaceBorrower):
                self.planner.remove(d.group)  # its holds, now placements
                self._placed(groups[d.group].spec, d.group, d.assignments)
            elif isinstance(d, dec.PlaceMember):
                self._placed(groups[d.group].spec, d.group, {d.member: d.assignments})
            elif isinstance(d, dec.HoldCapacity):
                self._held(d.group, groups[d.group].spec, d.holds)
            elif isinstance(d, dec.ReleaseGroup | dec.Preempt):
                self.planner.remove(d.group)

    def _placed(
        self, spec: GroupSpec, name: str, assignments: Mapping[str, Sequence[Assignment]]
    ) -> None:
        index = self.cluster.index
        for member_name in sorted(assignments):
            member = spec.member(member_name)
            runtime = runtimes.expected_runtime(spec, member, self.history)
            end = None if runtime.runtime_ns is None else self.now_ns + runtime.runtime_ns
            vec = shape_vec(member.shape)
            for a in assignments[member_name]:
                node = index.get(a.node)
                if node is not None:
                    self.planner.add([Use(node, vec, self.now_ns, end, name, runtime.basis)])

    def _held(self, name: str, spec: GroupSpec, holds: Mapping[str, Sequence[Assignment]]) -> None:
        index = self.cluster.index
        for member_name in sorted(holds):
            vec = shape_vec(spec.member(member_name).shape)
            for a in holds[member_name]:
                node = index.get(a.node)
                if node is not None:
                    self.planner.add([Use(node, vec, self.now_ns, None, name)])
