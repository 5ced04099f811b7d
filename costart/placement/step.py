"""`CoPlacementStep`: the Controller's placement step (``costart.controller.PlacementStep``),
the plain reference policy.

One `decide` call is one scheduling session. Every live group is visited once, in one
global order — priority (high first), then submission — so earlier groups take capacity
first and reservations are granted in that order (docs/design.md §3.4 #5). Waiting groups go to
`gangs`, placed groups get a claims pend reason, started groups get single placements.

Everything is read afresh every session — free capacity through the allocator, holds
and the live groups from the World — and nothing is kept from one session to the next,
whatever the allocator: this step is the reference the incremental one
(`costart.placement.incremental`) is compared with, and that one reuses this session
loop through the hooks below (`_session`, `_gang_session_class`, `_planner`, `_group_inputs`,
`_infeasible_check`), never the reverse.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

from costart.domain import decisions as dec
from costart.domain.capacity import Capacity
from costart.domain.errors import NotFound, SpecError
from costart.domain.events import DomainEvent
from costart.domain.spec_types import GroupSpec, Topology
from costart.domain.states import GROUP_STARTED, GROUP_WAITING, GroupState
from costart.domain.world import World
from costart.placement import reasons
from costart.placement.allocator import Allocator, BindConflict, InMemoryAllocator
from costart.placement.backfill import BackfillSession
from costart.placement.capacity import CapacityView
from costart.placement.cluster import Cluster, ClusterError
from costart.placement.cluster_file import ClusterDefinition, load_cluster
from costart.placement.constraints import Scope, check_references, resolve_scopes
from costart.placement.gangs import GangSession, InfeasibleCheck
from costart.placement.holdings import Holdings, LiveEntry, Usage, live_in_order, order_key
from costart.placement.inputs import FreshInputs, GroupInputs, PlanGang
from costart.placement.ledger import SessionLedger, empty_cluster_view, empty_up_view
from costart.placement.outside_note import outside_noted
from costart.placement.plan_ahead import ShadowSession, plans_ahead
from costart.placement.planner import Demand, Plan, Shortfall, plan_gang, shape_text
from costart.placement.singles import place_singles

MAX_REPLANS = 16  # a session planned again at most this often after refused binds
Order = Sequence[LiveEntry]


def session_order(groups: Sequence[GroupState]) -> list[GroupState]:
    """The one global order: priority descending, then submission sequence."""
    return sorted(groups, key=order_key)


class SessionPlan(NamedTuple):
    """What one planning of a session decided (`CoPlacementStep._plan`)."""

    decisions: list[dec.Decision]
    visits: dict[int, list[dec.Decision]]
    """Position in the order -> what that waiting group's visit appended."""
    idle: bool
    """Nothing was waiting and nothing wanted a single placement: no ledger was built."""
    singles: bool
    """Some live member wanted a single placement."""
    backfill_active: bool
    """Decisions read other groups' placements and the time (`BackfillSession.active`)."""


class CoPlacementStep:
    """Deterministic co-placement over a cluster behind an `Allocator`."""

    def __init__(
        self, allocator: Allocator, placement_groups: Mapping[str, Topology] | None = None
    ) -> None:
        self.allocator = allocator
        self.placement_groups: dict[str, Topology] = {}
        self.replans = 0  # sessions planned again after a refused bind
        self.gave_up = 0  # sessions that decided nothing after `MAX_REPLANS` refusals
        for name, topology in sorted((placement_groups or {}).items()):
            self.register_placement_group(name, topology)

    @classmethod
    def in_memory(cls, definition: ClusterDefinition) -> CoPlacementStep:
        """A step over a fresh in-memory allocator for a loaded cluster file."""
        return cls(InMemoryAllocator(definition.build()), dict(definition.placement_groups))

    @property
    def cluster(self) -> Cluster:
        return self.allocator.cluster

    def register_placement_group(self, name: str, topology: Topology) -> None:
        """Define (or redefine) a named placement group."""
        if not self.cluster.has_level(topology.level):
            raise ClusterError(
                f"placement_groups.{name}.level", f"unknown level {topology.level!r}"
            )
        self.placement_groups[name] = topology

    # --- at submit ---------------------------------------------------------------------

    def check_feasible(self, spec: GroupSpec) -> None:
        """Raise `SpecError` naming the member when the group can never fit the whole
        cluster (every node up and empty), or names an unknown placement group/level."""
        check_references(spec, self.cluster, self.placement_groups)
        view = empty_cluster_view(self.cluster)
        scopes = resolve_scopes(spec, self.cluster, self.placement_groups)
        for i, member in enumerate(spec.members):
            demand = Demand(member.name, member.shape, member.min_start)
            if not any(view.fits(member.shape)):
                raise SpecError(
                    f"members[{i}].shape",
                    f"no node can run one task of {shape_text(member.shape)}",
                )
            own = [s for s in scopes if s.members == (member.name,)]
            alone = plan_gang(self.cluster, [demand], own, view)
            if isinstance(alone, Shortfall):
                field = "topology" if own else ("tasks" if member.kind == "job" else "min_start")
                raise SpecError(
                    f"members[{i}].{field}",
                    f"can never fit the cluster: {alone.need}; {alone.best}",
                )
        whole = plan_gang(self.cluster, gang_demands_for(spec), scopes, view)
        if isinstance(whole, Shortfall):
            index = next(i for i, m in enumerate(spec.members) if m.name == whole.member)
            grouped = spec.placement.topology is not None or spec.placement.placement_group
            path = "placement.topology" if grouped else f"members[{index}]"
            raise SpecError(
                path,
                f"the group can never fit the cluster: {whole.member}: {whole.need}; {whole.best}",
            )

    # --- each session ------------------------------------------------------------------

    def check_node(self, node: str) -> None:
        """Raise `NotFound` unless the cluster has this node."""
        if node not in self.cluster.index:
            raise NotFound(f"the cluster has no node {node!r}")

    def node_offer(self, node: str) -> tuple[Capacity, str | None]:
        """What the cluster file says ``node`` offers, and its GPU type (`NotFound` for
        a node it does not have): what a host adapter compares with its own (ADR 0120)."""
        self.check_node(node)
        found = self.cluster.nodes[self.cluster.index[node]]
        return found.capacity, found.gpu_type

    def committed(self, events: Sequence[DomainEvent], position: int) -> None:
        """The Controller folded ``events`` into its World, which is now at log
        ``position``. This step reads the World afresh every session: nothing to learn
        (the incremental step learns what changed from them)."""

    def decide(self, world: World, now_ns: int) -> list[dec.Decision]:
        """One session's decisions, from a read-only view of the state.

        A bind the host refuses (`BindConflict`: another scheduler got there first)
        aborts the session, undoing every bind of it, and the session is planned again
        from the allocator's fresh free capacity, which has lost what the race took; no
        decision of the aborted plan is returned, so none of its holds reach the log.
        After `MAX_REPLANS` refusals in a row the session decides nothing (the next
        one tries again). A reason that waits for capacity names the host's other
        work when the allocator can (`outside_noted`)."""
        self.cluster.sync_status(world.node_status)
        for _ in range(MAX_REPLANS + 1):
            try:
                return outside_noted(self._session(world, now_ns), self.allocator)
            except BindConflict:
                self.allocator.abort()
                self._aborted()
                self.replans += 1
        self.gave_up += 1
        return []

    def _aborted(self) -> None:
        """A session's planning was aborted (a refused bind)."""

    def _session(self, world: World, now_ns: int) -> list[dec.Decision]:
        """One planning of the session (`decide`), ending in `Allocator.commit`."""
        free = self.allocator.free_capacity(world)
        usage = Usage(world, self.cluster)

        def ledger() -> SessionLedger:
            return SessionLedger(
                self.cluster, self.allocator, free, usage.held_total, usage.held_by
            )

        planned = self._plan(world, now_ns, live_in_order(world), usage, ledger)
        self.allocator.commit()
        return planned.decisions

    def _plan(
        self,
        world: World,
        now_ns: int,
        order: Order,
        holdings: Holdings,
        ledger: Callable[[], SessionLedger],
    ) -> SessionPlan:
        """Visit every live group of ``order`` once; ``ledger`` makes the session's
        ledger (not called when nothing is waiting and nothing wants a single
        placement: then only placed groups' reasons are decided, which read no
        capacity)."""
        singles = holdings.wanting > 0  # else no started group has a member to place alone
        if not singles and not any(group.status in GROUP_WAITING for group, _ in order):
            return SessionPlan(_claims_reasons(order), {}, True, singles, False)
        session_ledger = ledger()
        shadow = None
        if plans_ahead(order):
            shadow = ShadowSession(
                self.cluster,
                order,
                now_ns,
                list(session_ledger.free),
                self._planner(),
                world.runtime_history,
            )
        gangs = self._gang_session_class()(
            cluster=self.cluster,
            ledger=session_ledger,
            world=world,
            now_ns=now_ns,
            placement_groups=self.placement_groups,
            infeasible=self._infeasible_check(),
            plan=self._planner(),
            inputs=self._group_inputs(world),
            backfill=BackfillSession(self.cluster, session_ledger, now_ns, order),
            shadow=shadow,
        )
        by_name = {group.name: group for group, _ in order} if shadow is not None else {}
        noted = 0
        decisions = gangs.decisions
        preempted = gangs.backfill.preempted
        # The open reservations in the order: a waiting group may displace only those
        # after it (a slice of every group after it made each visit cost the queue's
        # length: quadratic in a session over 20,000 waiting groups).
        reserving = [
            (p, group) for p, (group, _) in enumerate(order) if group.status == "RESERVING"
        ]
        lower_reserving = [group for _, group in reserving]
        after = 0  # reserving[after:] are after the visited position
        visits: dict[int, list[dec.Decision]] = {}
        for position, (group, members) in enumerate(order):
            if preempted and group.name in preempted:
                continue  # stopped this session for a reservation: decided next session
            if shadow is not None:  # what earlier visits decided, into the shadow plan
                shadow.note(decisions[noted:], by_name)
                noted = len(decisions)
            if group.status in GROUP_WAITING:
                while after < len(reserving) and reserving[after][0] <= position:
                    after += 1
                before = len(decisions)
                gangs.waiting(group, members, lower_reserving[after:])
                visits[position] = decisions[before:]
            elif group.status == "PLACED":
                reason = reasons.waiting_for_claims(members)
                if reason is not None:
                    decisions.append(dec.SetPendReason(group.name, reason))
            elif singles and group.status in GROUP_STARTED:
                decisions.extend(
                    place_singles(
                        group, members, world, self.cluster, session_ledger, self.placement_groups
                    )
                )
        active = gangs.backfill.active or shadow is not None
        return SessionPlan(decisions, visits, False, singles, active)

    # --- hooks (the incremental step's speed-ups) ---------------------------------------

    def _gang_session_class(self) -> type[GangSession]:
        """What decides the session's waiting groups."""
        return GangSession

    def _planner(self) -> PlanGang:
        """How the session plans a gang in a view."""
        return self._plan_gang

    def _plan_gang(
        self,
        demands: Sequence[Demand],
        scopes: Sequence[Scope],
        view: CapacityView,
        prefer: CapacityView | None = None,
    ) -> Plan | Shortfall:
        return plan_gang(self.cluster, demands, scopes, view, prefer)

    def _group_inputs(self, world: World) -> GroupInputs:
        """Waiting groups' scopes and gang demands in this session's World."""
        return FreshInputs(self.cluster, world, self.placement_groups)

    def _infeasible_check(self) -> InfeasibleCheck:
        """The session's answer to: can the gang fit even an empty cluster of the up
        nodes? (The shortfall if not.)"""
        empty: list[CapacityView] = []  # made on first use, for this session only

        def infeasible(
            group: GroupState, demands: Sequence[Demand], scopes: Sequence[Scope]
        ) -> Shortfall | None:
            if not empty:
                empty.append(empty_up_view(self.cluster))
            result = plan_gang(self.cluster, demands, scopes, empty[0])
            return result if isinstance(result, Shortfall) else None

        return infeasible


def _claims_reasons(order: Order) -> list[dec.Decision]:
    """Each placed group's reason (its claims), in the order: a session's decisions
    when no group is waiting and no member wants a single placement."""
    decisions: list[dec.Decision] = []
    for group, members in order:
        if group.status == "PLACED":
            reason = reasons.waiting_for_claims(members)
            if reason is not None:
                decisions.append(dec.SetPendReason(group.name, reason))
    return decisions


def gang_demands_for(spec: GroupSpec) -> list[Demand]:
    return [Demand(m.name, m.shape, m.min_start, order=i) for i, m in enumerate(spec.members)]


def from_cluster_file(path: Path | None) -> CoPlacementStep:
    """The step ``costart serve`` uses: an in-memory allocator over a cluster file."""
    if path is None:
        raise ClusterError("cluster", "a cluster file is needed (e.g. scenarios/cluster-demo.toml)")
    return CoPlacementStep.in_memory(load_cluster(path))
