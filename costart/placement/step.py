"""`CoPlacementStep`: the Controller's placement step (``costart.controller.PlacementStep``).

One `decide` call is one scheduling session. Every live group is visited once, in one
global order — priority (high first), then submission — so earlier groups take capacity
first and reservations are granted in that order (DESIGN §3.4 #5). Waiting groups go to
`gangs`, placed groups get a claims pend reason, started groups get single placements.
Free capacity is re-derived from the World through the allocator every session.
"""

from __future__ import annotations

from bisect import insort
from collections.abc import Mapping, Sequence
from pathlib import Path

from costart.domain import decisions as dec
from costart.domain.errors import NotFound, SpecError
from costart.domain.spec_types import GroupSpec, Topology
from costart.domain.states import GROUP_STARTED, GROUP_WAITING, GroupState, MemberState
from costart.domain.world import World
from costart.placement import reasons
from costart.placement.allocator import Allocator, BindConflict, InMemoryAllocator
from costart.placement.backfill import BackfillSession
from costart.placement.cluster import Cluster, ClusterError
from costart.placement.cluster_file import ClusterDefinition, load_cluster
from costart.placement.constraints import Scope, check_references, resolve_scopes
from costart.placement.gangs import GangSession, PlanMemo
from costart.placement.group_inputs import GroupInputs
from costart.placement.last_session import LastSession, Order, SessionInputs
from costart.placement.ledger import (
    SessionLedger,
    StartCache,
    View,
    empty_cluster_view,
    empty_up_view,
)
from costart.placement.planner import Demand, Shortfall, plan_gang, shape_text
from costart.placement.singles import place_singles
from costart.placement.usage import WorldUsage

MAX_INFEASIBLE_CACHE = 4096
MAX_REPLANS = 16  # a session planned again at most this often after refused binds


def session_order(groups: Sequence[GroupState]) -> list[GroupState]:
    """The one global order: priority descending, then submission sequence."""
    return sorted(groups, key=_order_key)


def _order_key(group: GroupState) -> tuple[int, int]:
    return (-group.spec.priority, group.submission_seq)


def _with_members_in_order(
    live: Sequence[tuple[GroupState, list[MemberState]]],
) -> list[tuple[GroupState, list[MemberState]]]:
    """`session_order` of live groups paired with their members."""
    return sorted(live, key=_pair_order_key)


def _pair_order_key(pair: tuple[GroupState, list[MemberState]]) -> tuple[int, int]:
    return _order_key(pair[0])


def _live_in_order(
    usage: WorldUsage, before: object, order: list[tuple[GroupState, list[MemberState]]]
) -> list[tuple[GroupState, list[MemberState]]]:
    """`_with_members_in_order` of ``usage.live``, given ``order``, that of the live
    list ``before``. When the usage made its list from ``before`` by dropping some
    groups' entries and appending new ones (kept entries in order), the kept entries
    stay in ``order``'s order (a stable sort keeps their relative order, and ties
    follow the live list, where they are in the same order) and each new entry goes
    after every entry it does not sort before (it comes after them in the live list):
    the same list as sorting again."""
    relisted = usage.relisted
    if relisted is None or relisted[0] is not before:
        return _with_members_in_order(usage.live)
    _, gone, added = relisted
    kept = [pair for pair in order if pair[0].name not in gone] if gone else list(order)
    for pair in added:
        insort(kept, pair, key=_pair_order_key)
    return kept


class CoPlacementStep:
    """Deterministic co-placement over a cluster behind an `Allocator`."""

    def __init__(
        self, allocator: Allocator, placement_groups: Mapping[str, Topology] | None = None
    ) -> None:
        self.allocator = allocator
        self.placement_groups: dict[str, Topology] = {}
        # Infeasibility (can the gang fit the up nodes, empty?) is the costliest question
        # and changes only with node status: answers and the empty view are kept until
        # the status picture changes.
        self._infeasible_cache: dict[
            tuple[tuple[Demand, ...], tuple[Scope, ...]], Shortfall | None
        ] = {}
        self._status_key: tuple[str, ...] = ()
        self._empty_up: View | None = None
        # The World's holds and uses, kept current across sessions; shared with the
        # in-memory allocator, which syncs it when asked for free capacity.
        self._own_usage = not isinstance(allocator, InMemoryAllocator)
        # Which nodes moved since the carried arrays' start: known only for the
        # in-memory allocator (another allocator's capacity may move on its own).
        self._in_memory = allocator if isinstance(allocator, InMemoryAllocator) else None
        self._usage = (
            WorldUsage(allocator.cluster)
            if not isinstance(allocator, InMemoryAllocator)
            else allocator.usage
        )
        self._start = StartCache()  # the views' arrays, carried from session to session
        self._memo = PlanMemo(allocator.cluster)
        self._inputs = GroupInputs(allocator.cluster)  # waiting groups' scopes and demands
        self._ordered: tuple[object, list[tuple[GroupState, list[MemberState]]]] = (None, [])
        self._last: LastSession | None = None  # the last session, to answer a repeat
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

    def decide(self, world: World, now_ns: int) -> list[dec.Decision]:
        """One session's decisions, from a read-only view of the state.

        A bind the host refuses (`BindConflict`: another scheduler got there first)
        aborts the session, undoing every bind of it, and the session is planned again
        from the allocator's fresh free capacity, which has lost what the race took; no
        decision of the aborted plan is returned, so none of its holds reach the log.
        After `MAX_REPLANS` refusals in a row the session decides nothing (the next
        one tries again)."""
        self.cluster.sync_status(world.node_status)
        if self._own_usage:
            self._usage.sync(world)  # else the in-memory allocator syncs it for free capacity
        for _ in range(MAX_REPLANS + 1):
            try:
                return self._session(world, now_ns)
            except BindConflict:
                self.allocator.abort()
                self._last = None
                self.replans += 1
        self.gave_up += 1
        return []

    def _session(self, world: World, now_ns: int) -> list[dec.Decision]:
        """One planning of the session (`decide`), ending in `Allocator.commit`."""
        free = self.allocator.free_capacity(world)
        status_key = tuple(self.cluster.status)
        usage = self._usage
        if self._ordered[0] is not usage.live:  # a new list whenever the live set moved
            self._ordered = (usage.live, _live_in_order(usage, *self._ordered))
        order = self._ordered[1]
        inputs = SessionInputs(
            world, now_ns, status_key, self.placement_groups, usage.layout, order
        )
        if self._last is not None:
            repeated = self._last.repeat(inputs, usage.wanting)
            if repeated is not None:
                self.allocator.commit()
                return repeated
        if status_key != self._status_key:
            self._status_key = status_key
            self._infeasible_cache.clear()
            self._empty_up = None
        singles = usage.wanting > 0  # else no started group has a member to place alone
        if self._idle(order, singles):
            decisions = self._claims_reasons(order)
            self.allocator.commit()
            self._last = None
            if not self._own_usage:
                self._last = LastSession(inputs, {})
            return decisions
        moved = self._in_memory.take_moved() if self._in_memory is not None else None
        ledger = SessionLedger(
            self.cluster, self.allocator, world, usage, self._start, free=free, moved=moved
        )
        self._memo.new_session()
        self._inputs.new_session(world, self.placement_groups, usage.layout)
        gangs = GangSession(
            cluster=self.cluster,
            ledger=ledger,
            world=world,
            now_ns=now_ns,
            placement_groups=self.placement_groups,
            infeasible=self._infeasible,
            memo=self._memo,
            inputs=self._inputs,
            backfill=BackfillSession(self.cluster, ledger, now_ns, order),
        )
        decisions = gangs.decisions
        preempted = gangs.backfill.preempted
        groups = [group for group, _ in order]
        visits: dict[int, list[dec.Decision]] = {}
        for position, (group, members) in enumerate(order):
            if preempted and group.name in preempted:
                continue  # stopped this session for a reservation: decided next session
            if group.status in GROUP_WAITING:
                before = len(decisions)
                gangs.waiting(group, members, groups[position + 1 :])
                visits[position] = decisions[before:]
            elif group.status == "PLACED":
                reason = reasons.waiting_for_claims(members)
                if reason is not None:
                    decisions.append(dec.SetPendReason(group.name, reason))
            elif singles and group.status in GROUP_STARTED:
                decisions.extend(
                    place_singles(
                        group, members, world, self.cluster, ledger, self.placement_groups
                    )
                )
        self.allocator.commit()
        # Kept for a repeat only where it is provable: free capacity follows the World
        # (the in-memory allocator) and no started group changed the ledger.
        self._last = None
        # Backfill reads other groups' placements and the time: never repeated.
        if not self._own_usage and not singles and not gangs.backfill.active:
            self._last = LastSession(inputs, visits)
        return decisions

    @staticmethod
    def _idle(order: Order, singles: bool) -> bool:
        """Is there nothing to place (no waiting group, no single placement)? Then the
        session decides only placed groups' reasons, which read no capacity, and
        builds no ledger."""
        return not singles and not any(group.status in GROUP_WAITING for group, _ in order)

    @staticmethod
    def _claims_reasons(order: Order) -> list[dec.Decision]:
        """The session's decisions when no group is waiting and no member wants a single
        placement: each placed group's reason (its claims), in the order."""
        decisions: list[dec.Decision] = []
        for group, members in order:
            if group.status == "PLACED":
                reason = reasons.waiting_for_claims(members)
                if reason is not None:
                    decisions.append(dec.SetPendReason(group.name, reason))
        return decisions

    def _infeasible(
        self, group: GroupState, demands: Sequence[Demand], scopes: Sequence[Scope]
    ) -> Shortfall | None:
        """The shortfall if the gang cannot fit even an empty cluster of the up nodes.
        Keyed by what decides it (demands and scopes), so alike groups share answers."""
        key = (tuple(demands), tuple(scopes))
        if key in self._infeasible_cache:
            return self._infeasible_cache[key]
        if len(self._infeasible_cache) >= MAX_INFEASIBLE_CACHE:
            self._infeasible_cache.clear()
        if self._empty_up is None:
            self._empty_up = empty_up_view(self.cluster)
        result = plan_gang(self.cluster, demands, scopes, self._empty_up)
        shortfall = result if isinstance(result, Shortfall) else None
        self._infeasible_cache[key] = shortfall
        return shortfall


def gang_demands_for(spec: GroupSpec) -> list[Demand]:
    return [Demand(m.name, m.shape, m.min_start, order=i) for i, m in enumerate(spec.members)]


def from_cluster_file(path: Path | None) -> CoPlacementStep:
    """The step ``costart serve`` uses: an in-memory allocator over a cluster file."""
    if path is None:
        raise ClusterError("cluster", "a cluster file is needed (e.g. scenarios/cluster-demo.toml)")
    return CoPlacementStep.in_memory(load_cluster(path))
