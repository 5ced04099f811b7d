"""Waiting groups (PENDING or RESERVING): place the whole gang, or reserve, or explain.

Per group, in the global order (priority, then submission):

1. Try the whole gang now, in capacity that is free outside higher reservations' claims
   (plus the group's own holds). Success is one `PlaceGroup`.
2. ``atomic`` mode stops there: nothing is held; the pend reason says why.
3. ``reserve`` mode plans the gang in the capacity it could eventually have (capacity of
   up nodes minus other reservations' holds and higher claims), anchored on what it
   already holds and preferring nodes free now. It holds the parts of that plan that are
   free now and *claims* the rest, so no lower group takes them (docs/design.md §3.4 #5). If no
   plan exists unless lower reservations give way, those lower reservations are released.
   When every task of the plan is held, the reservation completes into a `PlaceGroup`.
4. ``plan-ahead`` mode plans the gang's start in capacity-in-time and claims its planned
   nodes without holding them (`costart.placement.plan_ahead`); where it cannot plan it
   reserves as ``reserve`` does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from itertools import groupby
from uuid import UUID

from costart.domain import decisions as dec
from costart.domain.events import Assignment, PendReason
from costart.domain.spec_types import Topology
from costart.domain.states import GroupState, MemberState
from costart.domain.world import World
from costart.placement import reasons
from costart.placement.backfill import BackfillSession
from costart.placement.capacity import CapacityView, Vec, shape_vec
from costart.placement.cluster import Cluster
from costart.placement.constraints import Scope, relaxed
from costart.placement.inputs import GroupInputs, PlanGang
from costart.placement.ledger import SessionLedger
from costart.placement.plan_ahead import PLAN_AHEAD, ShadowSession, preemptible_only
from costart.placement.planner import Demand, Plan, Shortfall, hardness, shape_text

InfeasibleCheck = Callable[[GroupState, Sequence[Demand], Sequence[Scope]], Shortfall | None]


def new_assignments(
    cluster: Cluster, nodes: Sequence[int], taken: Sequence[Assignment]
) -> tuple[Assignment, ...]:
    """Assignments for ``nodes`` using the lowest task indexes not in ``taken``."""
    used = {a.index for a in taken}
    out = []
    index = 0
    for node in nodes:
        while index in used:
            index += 1
        out.append(Assignment(index, cluster.nodes[node].name))
        used.add(index)
    return tuple(out)


@dataclass
class GangSession:
    """The waiting-group half of one session; shares the ledger with the rest."""

    cluster: Cluster
    ledger: SessionLedger
    world: World
    now_ns: int
    placement_groups: dict[str, Topology]
    infeasible: InfeasibleCheck
    plan: PlanGang
    """Plans a gang in a view (`plan_gang` over the cluster, or a memo of it)."""
    inputs: GroupInputs
    backfill: BackfillSession
    decisions: list[dec.Decision] = field(default_factory=list)
    released: set[UUID] = field(default_factory=set)
    reservations_ahead: list[str] = field(default_factory=list)
    """Open reservations decided so far this session, in queue order (names)."""
    shadow: ShadowSession | None = None
    """The session's shadow plan, when some waiting group plans ahead."""

    # --- entry -------------------------------------------------------------------------

    def waiting(
        self, group: GroupState, members: Sequence[MemberState], lower: Sequence[GroupState]
    ) -> None:
        """Decide for one PENDING or RESERVING group (``members``: its members in spec
        order); ``lower``: the open reservations (RESERVING groups) after it in the
        order, in order: those that may have to give way to it."""
        if group.id in self.released:
            return
        if group.status == "PENDING" and self.now_ns < group.retry_at_ns:
            self._reason(group, reasons.backoff(group))
            return
        missing = self._missing_placement_group(group)
        if missing is not None:
            self._give_up(group, "its placement group is not defined")
            self._reason(group, reasons.unknown_placement_group(*missing))
            return
        down = self._held_on_closed_node(members)
        if down is not None:
            self._release(group, f"held node {down} is no longer up")
            return
        scopes = self.inputs.scopes(group)
        demands = self.inputs.demands(group, members, fixed=False)
        now = self.plan(demands, scopes, self.ledger.now_view(group.name))
        if isinstance(now, Plan):
            self._place(group, members, now)
            return
        if self._backfilled(group, members, scopes):
            return
        if group.spec.placement.mode == "atomic":
            self._reason(group, self._explain(group, demands, scopes, now))
            return
        if group.spec.placement.mode == PLAN_AHEAD and self._planned_ahead(group, members, scopes):
            return
        self._reserve(group, members, scopes, now, lower)

    # --- outcomes ----------------------------------------------------------------------

    def _backfilled(
        self, group: GroupState, members: Sequence[MemberState], scopes: Sequence[Scope]
    ) -> bool:
        """A lending reservation taking back what it lent, or a borrower placed on lent
        capacity (`costart.placement.backfill`). True if decided."""
        backfill = self.backfill
        # A waiting plan-ahead gang may stop borrowers whose estimate ran out (ADR 0121).
        may_take = group.status == "RESERVING" or group.spec.placement.mode == PLAN_AHEAD
        if not backfill.lenders and not may_take:
            return False

        def plan_in(view: CapacityView) -> Plan | Shortfall:
            demands = self.inputs.demands(group, members, fixed=False)
            return self.plan(demands, scopes, view)

        if may_take:
            taken = backfill.take_back(group, members, plan_in)
            if taken is not None:
                plan, preemptions = taken
                self.decisions.extend(preemptions)
                self._place(group, members, plan)
                return True
        if backfill.lenders:
            borrowed = backfill.borrow(group, members, plan_in)
            if borrowed is not None:
                self.decisions.extend(borrowed)
                return True
        return False

    def _reason(self, group: GroupState, reason: PendReason) -> None:
        self.decisions.append(dec.SetPendReason(group.name, reason))

    def _place(self, group: GroupState, members: Sequence[MemberState], plan: Plan) -> None:
        """One `PlaceGroup`: own holds convert, the rest is taken from free capacity."""
        for node, vec in sorted(self.ledger.drop_holds(group.name).items()):
            self.ledger.give(node, vec)
        assignments: dict[str, tuple[Assignment, ...]] = {}
        for member in members:
            nodes = plan.nodes.get(member.name, [])
            self._take_all(nodes, shape_vec(member.spec.shape))
            assignments[member.name] = new_assignments(self.cluster, nodes, ())
        self.decisions.append(dec.PlaceGroup(group.name, assignments))

    def _take_all(self, nodes: Sequence[int], vec: Vec) -> None:
        # A plan lists a node once per task, its tasks side by side: one take per run.
        for node, tasks in groupby(nodes):
            self.ledger.take(node, vec, sum(1 for _ in tasks))

    def _release(self, group: GroupState, reason: str) -> None:
        for node, vec in sorted(self.ledger.drop_holds(group.name).items()):
            self.ledger.give(node, vec)
        self.released.add(group.id)
        self.decisions.append(dec.ReleaseGroup(group.name, reason))

    def _give_up(self, group: GroupState, reason: str) -> None:
        if group.status == "RESERVING":
            self._release(group, reason)

    # --- checks ------------------------------------------------------------------------

    def _missing_placement_group(self, group: GroupState) -> tuple[str | None, str] | None:
        spec = group.spec
        if (
            spec.placement.placement_group
            and spec.placement.placement_group not in self.placement_groups
        ):
            return None, spec.placement.placement_group
        for m in spec.members:
            if m.placement_group and m.placement_group not in self.placement_groups:
                return m.name, m.placement_group
        return None

    def _held_on_closed_node(self, members: Sequence[MemberState]) -> str | None:
        for member in members:
            for a in member.held:
                index = self.cluster.index.get(a.node)
                if index is None or not self.cluster.is_up(index):
                    return a.node
        return None

    def _explain(
        self,
        group: GroupState,
        demands: Sequence[Demand],
        scopes: Sequence[Scope],
        shortfall: Shortfall,
    ) -> PendReason:
        """Classify a gang that does not fit now: queue, infeasible, topology or capacity."""
        ahead = self.reservations_ahead
        # Each plan below is searched only when its answer can matter (searching changes
        # nothing): most groups have no reservation ahead and no scope.
        if ahead:
            unclaimed = self.ledger.now_view(group.name, honour_claims=False)
            if isinstance(self.plan(demands, scopes, unclaimed), Plan):
                return reasons.from_shortfall("queue", shortfall, ahead)
        never = self.infeasible(group, demands, scopes)
        if never is not None:
            return reasons.from_shortfall("infeasible", never, ahead)
        if scopes:
            unclaimed = self.ledger.now_view(group.name, honour_claims=False)
            if isinstance(self.plan(demands, relaxed(scopes), unclaimed), Plan):
                return reasons.from_shortfall("topology", shortfall, ahead)
        return reasons.from_shortfall("capacity", shortfall, ahead)

    # --- reservations ------------------------------------------------------------------

    def _eventual_plan(
        self,
        group: GroupState,
        demands: Sequence[Demand],
        scopes: Sequence[Scope],
        lower: Sequence[GroupState],
    ) -> Plan | Shortfall:
        prefer = self.ledger.now_view(group.name)
        plan = self.plan(demands, scopes, self.ledger.eventual_view(group.name), prefer)
        if isinstance(plan, Plan):
            return plan
        holders = [
            g
            for g in lower
            if g.status == "RESERVING"
            and g.id not in self.released
            and self.ledger.held_by.get(g.name)
        ]
        if not holders:
            return plan
        lower_holds: dict[int, Vec] = {}
        for g in holders:
            for node, vec in self.ledger.held_by[g.name].items():
                a = lower_holds.get(node, (0, 0, 0))
                lower_holds[node] = (a[0] + vec[0], a[1] + vec[1], a[2] + vec[2])
        wider: CapacityView = self.ledger.eventual_view(group.name, lower_holds)
        second = self.plan(demands, scopes, wider, prefer)
        if not isinstance(second, Plan):
            return plan
        used = {node for nodes in second.nodes.values() for node in nodes}
        for g in holders:
            if used & set(self.ledger.held_by.get(g.name, {})):
                self._release(g, f"yielded its holds to higher-ordered reservation {group.name}")
        return self.plan(demands, scopes, self.ledger.eventual_view(group.name), prefer)

    def _planned_ahead(
        self, group: GroupState, members: Sequence[MemberState], scopes: Sequence[Scope]
    ) -> bool:
        """A ``plan-ahead`` group with a planned start, while some lower waiting work
        could end before it, claims the capacity its plan needs beyond its holds and
        lends it to lower work that ends in time; True if so. Else (no planned start, or
        nothing lower could use the plan's capacity in time) it reserves as ``reserve``
        does, holding what frees only against lower work that would take it (ADR 0122)."""
        shadow = self.shadow
        if shadow is None:
            return False
        demands = self.inputs.demands(group, members, fixed=True)
        planned = shadow.plan(group, demands, scopes, self.ledger.now_view(group.name))
        if (
            planned.start_ns is None
            or group.status == "RESERVING"
            or shadow.nothing_lower_ends_by(group, planned.start_ns)
        ):
            # Nothing could borrow the plan's capacity in time, or it holds already:
            # `reserve`'s plan (anchored on its holds, preferring capacity free now)
            # keeps what has freed, where the shadow plan moves to other nodes whenever
            # an estimate slips and leaves what had freed to lower work (on the
            # starvation workload its gangs started later), and a reservation that
            # switched between the two plans from session to session lent its holds
            # against a start that kept slipping and never started (half-partition).
            # ADR 0122.
            return False
        claims = self.backfill.claims_for(group) or {}
        waiting: tuple[int, Demand] | None = None
        for demand in sorted(demands, key=lambda d: hardness(d, scopes)):
            vec = shape_vec(demand.shape)
            nodes = planned.nodes.get(demand.member, [])[len(demand.fixed) : demand.need]
            for node in nodes:
                self.ledger.add_claim(node, vec, 1, claims)
            if nodes and waiting is None:
                waiting = (len(nodes), demand)
        if waiting is None:
            return False  # nothing left to wait for: it reserves to complete
        count, demand = waiting
        reason = reasons.planned(
            demand.member,
            f"{count}×{shape_text(demand.shape)} on its planned nodes",
            planned.start_ns,
            planned.basis,
            self.reservations_ahead,
        )
        self._reason(group, shadow.reason(group, reason))
        self.reservations_ahead.append(group.name)
        self.backfill.add_lender(
            group,
            members,
            claims,
            start_ns=planned.start_ns,
            admit=partial(shadow.admits, group.name),
        )
        return True

    def _reserve(
        self,
        group: GroupState,
        members: Sequence[MemberState],
        scopes: Sequence[Scope],
        now: Shortfall,
        lower: Sequence[GroupState],
    ) -> None:
        demands = self.inputs.demands(group, members, fixed=True)
        plan = self._eventual_plan(group, demands, scopes, lower)
        if isinstance(plan, Shortfall):
            self._cannot_reserve(group, demands, scopes, now)
            return
        holds: dict[str, tuple[Assignment, ...]] = {}
        lends = self.backfill.claims_for(group)
        held_tasks = total_tasks = 0
        waiting: tuple[int, Demand] | None = None
        by_name = {m.name: m for m in members}
        hold = self._holds_when_reserving(group)
        for demand in sorted(demands, key=lambda d: hardness(d, scopes)):
            member = by_name[demand.member]
            vec = shape_vec(demand.shape)
            nodes = plan.nodes[demand.member][len(demand.fixed) : demand.need]
            fresh: list[int] = []
            unheld = len(nodes)
            if hold:
                fresh, unheld = self.ledger.hold_or_claim(group.name, nodes, vec, lends)
            else:
                for node in nodes:
                    self.ledger.add_claim(node, vec, 1, lends)
            if fresh:
                holds[demand.member] = new_assignments(self.cluster, fresh, member.held)
            total_tasks += demand.need
            held_tasks += demand.need - unheld
            if unheld and waiting is None:
                waiting = (unheld, demand)
        if waiting is None:
            self._complete(group, members, holds)
            return
        if holds or (group.status == "PENDING" and hold):
            self.decisions.append(dec.HoldCapacity(group.name, holds))
        unheld, demand = waiting
        reason = reasons.reserving(
            demand.member,
            f"{unheld} more×{shape_text(demand.shape)} on its planned nodes",
            held_tasks,
            total_tasks,
            self.reservations_ahead,
        )
        self._reason(group, self._with_planned_start(group, reason))
        self.reservations_ahead.append(group.name)
        if lends is not None:
            # A plan-ahead group that reserves lends only what it can take back.
            admit = preemptible_only if group.spec.placement.mode == PLAN_AHEAD else None
            self.backfill.add_lender(group, members, lends, admit=admit)

    def _with_planned_start(self, group: GroupState, reason: PendReason) -> PendReason:
        """A ``plan-ahead`` group's reason carries its shadow plan's start, if any."""
        if self.shadow is None or group.spec.placement.mode != PLAN_AHEAD:
            return reason
        return self.shadow.with_planned_start(group, reason)

    def _holds_when_reserving(self, group: GroupState) -> bool:
        """Does a reserving group hold what frees on its plan? ``reserve`` always; a
        ``plan-ahead`` group without a planned start only when lower work would take it
        (`ShadowSession.contested`, ADR 0122): else its claims keep the session's lower
        groups off the plan, and nothing is held idle for nobody."""
        shadow = self.shadow
        if group.spec.placement.mode != PLAN_AHEAD or shadow is None:
            return True
        return shadow.contested(group, self._fits_now)

    def _fits_now(self, group: GroupState, members: Sequence[MemberState]) -> bool:
        """Would ``group``'s gang fit now, outside the claims decided so far?"""
        demands = self.inputs.demands(group, members, fixed=False)
        view = self.ledger.now_view(group.name)
        return isinstance(self.plan(demands, self.inputs.scopes(group), view), Plan)

    def _complete(
        self,
        group: GroupState,
        members: Sequence[MemberState],
        fresh: dict[str, tuple[Assignment, ...]],
    ) -> None:
        """Every task of the plan is held: convert the holds into one `PlaceGroup`."""
        self.ledger.drop_holds(group.name)  # the capacity stays taken, now as placements
        assignments = {
            m.name: tuple(sorted((*m.held, *fresh.get(m.name, ())), key=lambda a: a.index))
            for m in members
        }
        self.decisions.append(dec.PlaceGroup(group.name, assignments))

    def _cannot_reserve(
        self,
        group: GroupState,
        demands: Sequence[Demand],
        scopes: Sequence[Scope],
        now: Shortfall,
    ) -> None:
        """No plan even in eventual capacity: stuck holds go, infeasible groups say so."""
        never = self.infeasible(group, demands, scopes)
        if group.status == "RESERVING" and (never is not None or self._holds_stuck(group, scopes)):
            self._release(group, "cluster changed: its holds no longer fit a plan")
        if never is not None:
            self._reason(
                group, reasons.from_shortfall("infeasible", never, self.reservations_ahead)
            )
            return
        if self.reservations_ahead:
            # No plan even once running work ends, yet the group fits the cluster: what
            # stands in its way is the reservations ahead (lower ones gave way above if
            # that was enough), so it queues behind them.
            reason = reasons.from_shortfall("queue", now, self.reservations_ahead)
        else:
            reason = self._explain(group, demands, scopes, now)
        self._reason(group, self._with_planned_start(group, reason))
        if group.status == "RESERVING" and group.id not in self.released:
            self.reservations_ahead.append(group.name)

    def _holds_stuck(self, group: GroupState, scopes: Sequence[Scope]) -> bool:
        members = self.world.members_of(group)
        if not any(m.held for m in members):
            return False
        loose = self.inputs.demands(group, members, fixed=False)
        view = self.ledger.eventual_view(group.name)
        return isinstance(self.plan(loose, scopes, view), Plan)
