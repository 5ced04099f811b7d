"""`IncrementalStep`: the co-placement step with the speed-ups that keep state from one
scheduling session to the next.

It decides exactly as the plain `CoPlacementStep` (whose session loop it runs, through
that step's hooks): what it keeps is only ever a faster way to the same answer, and the
tests compare the two session by session (`tests/placement/compared_step.py`). Kept:

* `WorldUsage`: what the live members hold (and where they are placed), recounted only
  for the members the committed events changed (`EventJournal`, fed by `committed`);
  the allocators of `in_memory` and `over_host` read what they use (``used``) from
  where the World's folds keep it (`UsedCount`, `World.node_use`);
* the live groups in session order, re-sorted only when the live set moved;
* `StartCache`: the ledger's base arrays as of the last session's start (`CarriedLedger`);
* `PlanMemo`: plans by what of the capacity they read; `KeptInputs`: each waiting
  group's scopes and demands;
* infeasibility answers, until node status changes;
* `LastSession`: the last session's waiting-group decisions, repeated when provably
  nothing they read changed.

Within a session, `AlikeVisits` repeats an alike waiting group's pend reason when
nothing the visit reads has changed since (it keeps nothing across sessions).

Nothing here depends on which allocator is behind the port: what the allocator reports
is compared, never assumed (ADR 0052).
"""

from __future__ import annotations

from bisect import insort
from collections.abc import Mapping, Sequence
from pathlib import Path

from costart.domain import decisions as dec
from costart.domain.events import DomainEvent
from costart.domain.spec_types import Topology
from costart.domain.states import GroupState
from costart.domain.world import World
from costart.gc_pause import gc_paused, promote_tracked
from costart.placement.allocator import Allocator, InMemoryAllocator
from costart.placement.capacity import CapacityView
from costart.placement.cluster import Cluster, ClusterError
from costart.placement.cluster_file import ClusterDefinition, load_cluster
from costart.placement.constraints import Scope
from costart.placement.gangs import GangSession, InfeasibleCheck
from costart.placement.holdings import LiveEntry, in_session_order, pair_order_key
from costart.placement.host_allocator import HostAllocator, HostLoad
from costart.placement.incremental.alike_visits import AlikeVisits
from costart.placement.incremental.carried import CarriedLedger, StartCache
from costart.placement.incremental.group_inputs import KeptInputs
from costart.placement.incremental.journal import EventJournal
from costart.placement.incremental.last_session import LastSession, SessionInputs, repeatable
from costart.placement.incremental.plan_memo import PlanMemo
from costart.placement.incremental.usage import WorldUsage
from costart.placement.incremental.used import UsedCount
from costart.placement.inputs import GroupInputs, PlanGang
from costart.placement.ledger import SessionLedger, empty_up_view
from costart.placement.planner import Demand, Shortfall, plan_gang
from costart.placement.reported_load import ReportedLoad
from costart.placement.step import CoPlacementStep

MAX_INFEASIBLE_CACHE = 4096


class IncrementalStep(CoPlacementStep):
    """`CoPlacementStep`'s decisions, with state kept across sessions (see the module).
    ``journal``: where `committed` notes the committed events."""

    def __init__(
        self,
        allocator: Allocator,
        placement_groups: Mapping[str, Topology] | None = None,
        journal: EventJournal | None = None,
    ) -> None:
        super().__init__(allocator, placement_groups)
        self.journal = journal if journal is not None else EventJournal()
        cluster = allocator.cluster
        # Infeasibility (can the gang fit the up nodes, empty?) is the costliest question
        # and changes only with node status: answers and the empty view are kept until
        # the status picture changes.
        self._infeasible_cache: dict[
            tuple[tuple[Demand, ...], tuple[Scope, ...]], Shortfall | None
        ] = {}
        self._status_key: tuple[str, ...] = ()
        self._empty_up: CapacityView | None = None
        # The step's own count of holds, not the allocator's count of use.
        self._usage = WorldUsage(cluster, self.journal)
        self._held_moved: set[int] | None = None  # since the last ledger (None: every node)
        self._start = StartCache()  # the views' arrays, carried from session to session
        self._memo = PlanMemo(cluster)
        self._inputs = KeptInputs(cluster)  # waiting groups' scopes and demands
        self._ordered: tuple[object, list[LiveEntry]] = (None, [])
        self._last: LastSession | None = None  # the last session, to answer a repeat

    @classmethod
    def in_memory(cls, definition: ClusterDefinition) -> IncrementalStep:
        """A step over a fresh in-memory allocator for a loaded cluster file; the
        allocator reads the use per node the World keeps (`UsedCount`)."""
        return cls.on_cluster(definition.build(), dict(definition.placement_groups))

    @classmethod
    def on_cluster(
        cls, cluster: Cluster, placement_groups: Mapping[str, Topology] | None = None
    ) -> IncrementalStep:
        """`in_memory` for a cluster already built (``cluster``: the step's own)."""
        return cls(InMemoryAllocator(cluster, UsedCount(cluster)), placement_groups)

    @classmethod
    def over_host(cls, definition: ClusterDefinition, load: HostLoad) -> IncrementalStep:
        """A step over the host's allocator (`HostAllocator`) for a loaded cluster file."""
        return cls.on_host(definition.build(), load, dict(definition.placement_groups))

    @classmethod
    def on_host(
        cls,
        cluster: Cluster,
        load: HostLoad,
        placement_groups: Mapping[str, Topology] | None = None,
    ) -> IncrementalStep:
        """`over_host` for a cluster already built (``load``: per node in its order)."""
        return cls(HostAllocator(cluster, load, UsedCount(cluster)), placement_groups)

    def committed(self, events: Sequence[DomainEvent], position: int) -> None:
        """Note what the committed ``events`` changed (`EventJournal.note`)."""
        self.journal.note(events, position)

    def decide(self, world: World, now_ns: int) -> list[dec.Decision]:
        """`CoPlacementStep.decide`, with the cyclic garbage collector paused: a cold
        session over a large cluster makes tens of thousands of short-lived tuples (the
        World's use per node, free vectors, fit counts), and the collections they set
        off walked the whole World for nothing: 6% of a cold step's instructions on
        16,384 nodes, 12% on 65,536 (ADR 0104). A session makes no reference cycles (a
        test holds it to that). A session that made the carried per-node arrays afresh
        (a cold step, or a start over) promotes what it leaves past the young
        generations before the collector resumes: the first young collection walked
        each of their references, 44.5 M instructions on 65,536 nodes (ADR 0153)."""
        with gc_paused():
            decisions = super().decide(world, now_ns)
            if self._start.made_afresh():
                promote_tracked()
            return decisions

    def _aborted(self) -> None:
        self._last = None

    def _session(self, world: World, now_ns: int) -> list[dec.Decision]:
        free = self.allocator.free_capacity(world)
        usage = self._usage
        moved = usage.sync(world)
        if self._held_moved is not None:
            if moved is None:
                self._held_moved = None  # every node: the next ledger compares all
            else:
                self._held_moved |= moved
        status_key = self.cluster.status_now()
        if self._ordered[0] is not usage.live:  # a new list whenever the live set moved
            self._ordered = (usage.live, _live_in_order(usage, *self._ordered))
        order = self._ordered[1]
        inputs = SessionInputs(
            world, now_ns, free, status_key, self.placement_groups, usage.layout, order
        )
        last, self._last = self._last, None
        if last is not None:
            repeated = last.repeat(inputs, usage.wanting)
            if repeated is not None:
                self.allocator.commit()
                self._last = last
                return repeated
        if status_key != self._status_key:
            self._status_key = status_key
            self._infeasible_cache.clear()
            self._empty_up = None

        def ledger() -> SessionLedger:
            held_moved, self._held_moved = self._held_moved, set()
            return CarriedLedger(
                self.cluster, self.allocator, free, usage, self._start, held_moved, status_key
            )

        self._memo.new_session()
        self._inputs.new_session(world, self.placement_groups, usage.layout)
        planned = self._plan(world, now_ns, order, usage, ledger)
        self.allocator.commit()
        # Backfill reads other groups' placements and the time: never repeated.
        if planned.idle or (
            not planned.singles and not planned.backfill_active and repeatable(planned.visits)
        ):
            self._last = LastSession(inputs, planned.visits, self.journal)
        return planned.decisions

    def _gang_session_class(self) -> type[GangSession]:
        return AlikeVisits

    def _planner(self) -> PlanGang:
        return self._memo.plan

    def _group_inputs(self, world: World) -> GroupInputs:
        return self._inputs

    def _infeasible_check(self) -> InfeasibleCheck:
        return self._infeasible

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


def _live_in_order(usage: WorldUsage, before: object, order: list[LiveEntry]) -> list[LiveEntry]:
    """`in_session_order` of ``usage.live``, given ``order``, that of the live
    list ``before``. When the usage made its list from ``before`` by dropping some
    groups' entries and appending new ones (kept entries in order), the kept entries
    stay in ``order``'s order (a stable sort keeps their relative order, and ties
    follow the live list, where they are in the same order) and each new entry goes
    after every entry it does not sort before (it comes after them in the live list):
    the same list as sorting again."""
    relisted = usage.relisted
    if relisted is None or relisted[0] is not before:
        return in_session_order(usage.live)
    _, gone, added = relisted
    kept = [pair for pair in order if pair[0].name not in gone] if gone else list(order)
    for pair in added:
        insort(kept, pair, key=pair_order_key)
    return kept


def from_cluster_file(path: Path | None) -> IncrementalStep:
    """The step ``costart serve`` uses by default: the incremental step for a cluster
    file, over the host's allocator with the outside use its nodes' agents report
    (`ReportedLoad`: none until one reports, ADR 0118); `costart.placement.from_cluster_file`
    gives the plain step over an in-memory allocator."""
    if path is None:
        raise ClusterError("cluster", "a cluster file is needed (e.g. scenarios/cluster-demo.toml)")
    definition = load_cluster(path)
    cluster = definition.build()
    load = ReportedLoad([node.name for node in cluster.nodes])  # in the cluster's order
    return IncrementalStep.on_host(cluster, load, dict(definition.placement_groups))
