"""Backfill into held capacity: one session's lenders, borrowers and take-backs (ADR 0045).

A ``reserve-backfill`` reservation (a *lender*) plans and holds like ``reserve``; what
its plan needs but cannot use yet — its held tasks, and free capacity it claims on its
planned nodes — may be used by a lower waiting group (a *borrower*) whose every member is
``preemptible`` or declares a ``max_runtime`` that ends before the lender's expected
completion. Capacity is counted once: a lent hold is given up (`HoldLent`) and counted
as the borrower's use; it stays owed, because the lender claims its whole plan every
session, so no other lower group can take it.

Expected completion: the latest declared end (start + ``max_runtime``) of the work on
the nodes the lender still waits for, capped by its reservation deadline; work without a
limit there makes it the deadline.

When the lender's gang fits once the preemptible groups on its nodes are gone (lower
groups whose every member is ``preemptible``), those groups are stopped (`Preempt`,
reason ``preempted``) and the gang is placed in the same session. Any reservation
(``reserve`` too) may stop lower preemptible work this way, so a borrower of a lower
lender never blocks a higher reservation. A time limit is not a kill switch (ADR 0092):
work that is not preemptible is never stopped for a reservation — a limited borrower
ends by its own limit, which it could borrow only because that limit ends before the
lender's expected completion. The one exception (ADR 0121): a borrower a ``plan-ahead``
lender admitted on a learned runtime estimate may be stopped like preemptible work once
the until-time its placement recorded has passed. Every decision here is a function of
the World, the order and the time.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from costart.domain import LENDING_MODES
from costart.domain import decisions as dec
from costart.domain.events import Assignment, RuntimeEstimate
from costart.domain.states import GROUP_STARTED, GroupState, MemberState, estimate_ran_out
from costart.placement.capacity import ZERO, CapacityView, NodeVecs, Vec, add_vecs, shape_vec
from costart.placement.cluster import Cluster
from costart.placement.ledger import SessionLedger
from costart.placement.planner import Plan, Shortfall

Order = Sequence[tuple[GroupState, list[MemberState]]]
_TAKEN_BACK = frozenset({"PLACED", *GROUP_STARTED})
PlanIn = Callable[[CapacityView], Plan | Shortfall]
"""Plans the visited group's gang in a view (through the session's memo)."""


class Admitted(NamedTuple):
    """A borrower admitted by a ``plan-ahead`` lender: on declared limits (``until_ns``
    None), or on runtime estimates until ``until_ns``, the ``estimates`` recorded."""

    until_ns: int | None = None
    estimates: tuple[RuntimeEstimate, ...] = ()


Admit = Callable[[GroupState, Sequence[MemberState], Plan], Admitted | None]
"""May this borrower start now on this plan without delaying a planned start? How."""


def may_borrow(group: GroupState, lender: Lender, now_ns: int) -> bool:
    """Every member is preemptible or ends (by its limit, counted from now) before the
    lender's expected completion. (A ``plan-ahead`` lender judges its borrowers by the
    shadow plan instead, `Lender.admit`.)"""
    for member in group.spec.members:
        if member.preemptible:
            continue
        limit = member.max_runtime_ns
        if limit is None or now_ns + limit > lender.expected_ns:
            return False
    return True


def _preemptible(group: GroupState) -> bool:
    return all(m.preemptible for m in group.spec.members)


@dataclass
class Lender:
    """An open ``reserve-backfill`` reservation, as this session decided it."""

    name: str
    position: int
    expected_ns: int
    claims: NodeVecs = field(default_factory=dict)  # what its plan claims this session
    # Its held tasks (from the World), per node: (member, task, vector).
    holds: dict[int, list[tuple[str, Assignment, Vec]]] = field(default_factory=dict)
    admit: Admit | None = None
    """A ``plan-ahead`` lender's check of a borrower's plan against the session's
    shadow plan (`costart.placement.plan_ahead.ShadowSession.admits`)."""


@dataclass
class Taken:
    """A placed or started lower group and what it uses per node."""

    position: int
    group: GroupState
    members: list[MemberState]
    uses: NodeVecs


class BackfillSession:
    """The lenders decided so far this session, and the groups stopped for them."""

    def __init__(self, cluster: Cluster, ledger: SessionLedger, now_ns: int, order: Order):
        self.cluster = cluster
        self.ledger = ledger
        self.now_ns = now_ns
        self.order = order
        self._position: dict[str, int] | None = None  # made on first use
        self.lenders: list[Lender] = []
        self.preempted: set[str] = set()
        # A lender, or work a reservation may stop, was seen: decisions read other groups'
        # placements and the time, so the step does not repeat the session.
        self.active = False
        self._work: dict[int, list[tuple[GroupState, MemberState]]] | None = None
        self._stoppable_groups: list[Taken] | None = None

    @property
    def position(self) -> dict[str, int]:
        """Each live group's place in the session order."""
        if self._position is None:
            self._position = {group.name: i for i, (group, _) in enumerate(self.order)}
        return self._position

    # --- lenders ---------------------------------------------------------------------

    def claims_for(self, group: GroupState) -> NodeVecs | None:
        """Where the reservation records its claims, if it lends (else None)."""
        if group.spec.placement.mode not in LENDING_MODES:
            return None
        self.active = True
        return {}

    def add_lender(
        self,
        group: GroupState,
        members: Sequence[MemberState],
        claims: NodeVecs,
        *,
        start_ns: int | None = None,
        admit: Admit | None = None,
    ) -> None:
        """The reservation stays open this session: from here on it lends. A planned
        ``start_ns`` is its expected completion (else the latest declared end on its
        nodes, capped by its deadline); ``admit``: its borrowers' check."""
        index = self.cluster.index
        holds: dict[int, list[tuple[str, Assignment, Vec]]] = {}
        for member in members:
            vec = shape_vec(member.spec.shape)
            for a in member.held:
                node = index.get(a.node)
                if node is not None:
                    holds.setdefault(node, []).append((member.name, a, vec))
        deadline = group.reservation_deadline_ns
        if deadline is None:  # opened by this session's decision
            deadline = self.now_ns + group.spec.placement.timeout_ns
        if start_ns is None:
            expected = self._expected_completion(group.name, claims, deadline)
        else:
            expected = start_ns
        position = self.position[group.name]
        self.lenders.append(Lender(group.name, position, expected, claims, holds, admit))

    def _expected_completion(self, name: str, claims: NodeVecs, deadline: int) -> int:
        """When the nodes it still waits for empty if their work ends at its limits."""
        latest = self.now_ns
        work = self._node_work()
        for node in sorted(claims):
            for group, member in work.get(node, ()):
                if group.name == name:
                    continue
                limit = member.spec.max_runtime_ns
                if limit is None:
                    return deadline
                began = member.started_at_ns if member.started_at_ns is not None else self.now_ns
                latest = max(latest, began + limit)
        return min(latest, deadline)

    def _node_work(self) -> dict[int, list[tuple[GroupState, MemberState]]]:
        """The live members holding or using capacity on each node (made once)."""
        if self._work is None:
            index = self.cluster.index
            work: dict[int, list[tuple[GroupState, MemberState]]] = {}
            for group, members in self.order:
                for member in members:
                    for a in (*member.held, *member.assignments):
                        node = index.get(a.node)
                        if node is not None:
                            work.setdefault(node, []).append((group, member))
            self._work = work
        return self._work

    # --- borrowing -----------------------------------------------------------------

    def borrow(
        self,
        group: GroupState,
        members: Sequence[MemberState],
        plan_in: PlanIn,
    ) -> list[dec.Decision] | None:
        """Place the whole gang on what a lender ahead can lend, the first that can;
        the decisions (lend, then place), or None."""
        position = self.position[group.name]
        for lender in self.lenders:
            if lender.position >= position:
                continue
            if lender.admit is None and not may_borrow(group, lender, self.now_ns):
                continue  # (a plan-ahead lender's own check comes once a plan exists)
            avail = self._lendable(lender)
            if not avail:
                continue
            plan = plan_in(self.ledger.now_view_with(group.name, avail))
            if not isinstance(plan, Plan):
                continue
            if lender.admit is None:
                return self._lend_and_place(group, members, plan, lender, Admitted())
            admitted = lender.admit(group, members, plan)
            if admitted is not None:
                return self._lend_and_place(group, members, plan, lender, admitted)
        return None

    def _lendable(self, lender: Lender) -> dict[int, Vec]:
        """Per node of its plan: free capacity outside other groups' claims, plus the
        holds it has there from earlier sessions."""
        ledger = self.ledger
        out: dict[int, Vec] = {}
        for node in sorted({*lender.claims, *lender.holds}):
            own = lender.claims.get(node, (0, 0, 0))
            # Only holds recorded before this session can be lent (`lend_holds` names
            # them); a hold this session's decision adds is not in the World yet.
            h = [0, 0, 0]
            for _, _, vec in lender.holds.get(node, ()):
                h = [h[0] + vec[0], h[1] + vec[1], h[2] + vec[2]]
            free, claim = ledger.free[node], ledger.claim.get(node, ZERO)
            out[node] = tuple(  # type: ignore[assignment]
                max(0, free[d] + h[d] - (claim[d] - own[d])) for d in range(3)
            )
        return out

    def _lend_and_place(
        self,
        group: GroupState,
        members: Sequence[MemberState],
        plan: Plan,
        lender: Lender,
        admitted: Admitted,
    ) -> list[dec.Decision]:
        ledger = self.ledger
        for node, vec in sorted(ledger.drop_holds(group.name).items()):
            ledger.give(node, vec)
        need: NodeVecs = {}
        for member in members:
            vec = shape_vec(member.spec.shape)
            for node in plan.nodes.get(member.name, []):
                add_vecs(need, node, vec)
        lent: dict[str, list[Assignment]] = {}
        for node in sorted(need):
            want = need[node]
            while not self._fits_outside_claims(node, want, lender) and lender.holds.get(node):
                name, task, vec = lender.holds[node].pop()
                ledger.drop_hold(lender.name, node, vec)
                ledger.add_claim(node, vec, 1, lender.claims)  # still owed to the lender
                lent.setdefault(name, []).append(task)
        assignments: dict[str, tuple[Assignment, ...]] = {}
        for member in members:
            nodes = plan.nodes.get(member.name, [])
            vec = shape_vec(member.spec.shape)
            for node in nodes:
                ledger.take(node, vec)
            assignments[member.name] = tuple(
                Assignment(i, self.cluster.nodes[node].name) for i, node in enumerate(nodes)
            )
        decisions: list[dec.Decision] = []
        if lent:
            holds = {m: tuple(sorted(ts, key=lambda a: a.index)) for m, ts in sorted(lent.items())}
            decisions.append(dec.LendHolds(lender.name, holds, group.name))
        decisions.append(
            dec.PlaceBorrower(
                group.name, assignments, lender.name, admitted.until_ns, admitted.estimates
            )
        )
        if admitted.until_ns is not None:
            self.active = True  # it may be stopped once its estimate runs out
        return decisions

    def _fits_outside_claims(self, node: int, want: Vec, lender: Lender) -> bool:
        free, claim = self.ledger.free[node], self.ledger.claim.get(node, ZERO)
        own = lender.claims.get(node, (0, 0, 0))
        return all(want[d] <= free[d] - (claim[d] - own[d]) for d in range(3))

    # --- taking back ---------------------------------------------------------------

    def take_back(
        self, group: GroupState, members: Sequence[MemberState], plan_in: PlanIn
    ) -> tuple[Plan, list[dec.Decision]] | None:
        """If the reservation's gang fits once the lower preemptible groups leave its
        nodes: the plan and the preemptions (capacity given back in the ledger), else
        None. Any reservation may stop lower preemptible work (so a borrower of a lower
        lender never blocks a higher reservation for longer than a session), and a lower
        borrower whose runtime estimate has run out (ADR 0121), and only those: other
        work that is not preemptible is never stopped (ADR 0092).

        A waiting ``plan-ahead`` gang that holds nothing (its plan lends what it
        claims) is not a reservation yet, but it still enforces the fallback of what
        was lent on an estimate: it stops only borrowers whose estimate has run out."""
        reserving = group.status == "RESERVING" and group.reservation_deadline_ns is not None
        planning = group.status == "PENDING" and group.spec.placement.mode == "plan-ahead"
        if not reserving and not planning:
            return None
        if not self._stoppable():
            return None
        taken = self._taken_back_from(self.position[group.name])
        if not reserving:
            taken = [t for t in taken if estimate_ran_out(t.group, self.now_ns)]
        if not taken:
            return None
        ledger = self.ledger
        extra: NodeVecs = {}
        for t in taken:
            for node, vec in t.uses.items():
                add_vecs(extra, node, vec)
        avail: dict[int, Vec] = {}
        for node, vec in sorted(extra.items()):
            free, claim = ledger.free[node], ledger.claim.get(node, ZERO)
            avail[node] = tuple(  # type: ignore[assignment]
                max(0, free[d] + vec[d] - claim[d]) for d in range(3)
            )
        plan = plan_in(ledger.now_view_with(group.name, avail))
        if not isinstance(plan, Plan):
            return None
        used = {node for nodes in plan.nodes.values() for node in nodes}
        decisions: list[dec.Decision] = []
        for t in taken:
            hit = sorted(used & set(t.uses))
            if not hit:
                continue
            names = tuple(self.cluster.nodes[node].name for node in hit)
            decisions.append(dec.Preempt(t.group.name, names, group.name))
            self.preempted.add(t.group.name)
            self._give_back(t, set(names))
        return plan, decisions

    def _taken_back_from(self, position: int) -> list[Taken]:
        """Lower placed or started groups the reservation may stop (all preemptible, or
        admitted on an estimate that has run out)."""
        return [
            t
            for t in self._stoppable()
            if t.position > position and t.group.name not in self.preempted
        ]

    def _stoppable(self) -> list[Taken]:
        """Placed or started groups whose every member is preemptible, or that borrowed
        on a runtime estimate that has run out (ADR 0121), with what they use per node
        (made once per session)."""
        if self._stoppable_groups is None:
            index = self.cluster.index
            found: list[Taken] = []
            for position, (group, members) in enumerate(self.order):
                if group.status not in _TAKEN_BACK:
                    continue
                if group.admitted_until_ns is not None:
                    self.active = True  # it becomes stoppable at a time: read the clock
                if not (_preemptible(group) or estimate_ran_out(group, self.now_ns)):
                    continue
                uses: NodeVecs = {}
                for member in members:
                    vec = shape_vec(member.spec.shape)
                    for a in member.assignments:
                        node = index.get(a.node)
                        if node is not None:
                            add_vecs(uses, node, vec)
                if uses:
                    found.append(Taken(position, group, members, uses))
            self._stoppable_groups = found
            self.active = self.active or bool(found)
        return self._stoppable_groups

    def _give_back(self, taken: Taken, nodes: set[str]) -> None:
        """In the ledger, what the preemption surely frees: a job's every task (its
        failure is the job's), a replica set's replicas on those nodes."""
        index = self.cluster.index
        for member in taken.members:
            vec = shape_vec(member.spec.shape)
            hit = [a for a in member.assignments if a.node in nodes]
            if not hit:
                continue
            freed = member.assignments if member.spec.kind == "job" else hit
            for a in freed:
                node = index.get(a.node)
                if node is not None:
                    self.ledger.give(node, vec)
