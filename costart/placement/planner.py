"""The gang planner: place every member of one group in a capacity `CapacityView`, or explain why
not.

Members go hardest first (most GPUs in total, then most constrained, then spec order).
For each member, every pack scope over it is bound to a candidate domain (best fit first,
so big empty domains stay whole for big gangs), then its tasks are laid out greedily on
the allowed nodes. If a later member does not fit, the search backtracks to the next
candidate domain. All orders are by stable keys (node order, domain id), and the search
has a step budget, so a plan is deterministic and bounded.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import chain, compress, filterfalse
from operator import not_
from typing import NamedTuple

from costart.domain.spec_types import Shape
from costart.placement.capacity import CapacityView, Vec, fit_count, shape_vec
from costart.placement.cluster import Cluster
from costart.placement.constraints import Scope

MAX_PLAN_STEPS = 400
MAX_DOMAIN_CANDIDATES = 32


class Demand(NamedTuple):
    """Tasks to place for one member: ``need`` in total, of which ``fixed`` (node
    indexes of tasks it already holds) count first; ``extra`` more are best effort.
    (A named tuple: built for every waiting member every session, and cheap to hash as
    part of a plan's memo key.)"""

    member: str
    shape: Shape
    need: int
    fixed: tuple[int, ...] = ()
    extra: int = 0
    order: int = 0


@dataclass(frozen=True)
class Plan:
    """Node index per task, per member (fixed tasks first, then new ones)."""

    nodes: dict[str, list[int]]


@dataclass(frozen=True)
class Shortfall:
    """Why the gang does not fit: the blocking member, what it needs, the best found."""

    member: str
    need: str
    best: str
    depth: int
    got: int = 0


@lru_cache(maxsize=1024)
def shape_text(shape: Shape) -> str:
    parts = [
        f"{k}:{v}"
        for k, v in (("gpu", shape.gpu), ("cpu", shape.cpu), ("mem_gb", shape.mem_gb))
        if v
    ]
    if shape.gpu_type:
        parts.append(f"type:{shape.gpu_type}")
    return "{" + ", ".join(parts) + "}"


def hardness(demand: Demand, scopes: Sequence[Scope]) -> tuple[int, int, int, int]:
    constrained = 0  # a loop, not a generator: most groups have no scope at all
    for s in scopes:
        if s.required and demand.member in s.members:
            constrained += 1
    return (
        -demand.shape.gpu * demand.need,
        -constrained,
        -(demand.shape.cpu * demand.need),
        demand.order,
    )


class _Search:
    def __init__(
        self,
        cluster: Cluster,
        demands: Sequence[Demand],
        scopes: Sequence[Scope],
        view: CapacityView,
        prefer: CapacityView | None,
        order: Sequence[Demand] | None = None,
    ) -> None:
        self.cluster = cluster
        self.view = view
        self.prefer = prefer
        self.order = (
            list(order) if order is not None else sorted(demands, key=lambda d: hardness(d, scopes))
        )
        self.scopes = list(scopes)
        self.bound: dict[int, str | None] = {}
        # What is left on each node this plan took from (the view minus its own takes).
        self.left: dict[int, Vec] = {}
        self.spread_used: dict[int, dict[str, int]] = {}
        self.result: dict[str, list[int]] = {}
        self.steps = 0
        self.failure: Shortfall | None = None

    # --- capacity with this plan's own tentative takes ---------------------------------

    def fit(self, node: int, shape: Shape) -> int:
        base = self.view.fits(shape)[node]
        left = self.left.get(node)
        if left is None or base == 0:
            return base
        return fit_count(left, shape)

    def _take(self, node: int, shape: Shape, count: int, log: list[tuple[int, Vec]]) -> None:
        vec = shape_vec(shape, count)
        g, c, m = self.left.get(node) or self.view.avail(node)
        self.left[node] = (g - vec[0], c - vec[1], m - vec[2])
        log.append((node, vec))

    def _undo(self, log: list[tuple[int, Vec]]) -> None:
        for node, vec in reversed(log):
            g, c, m = self.left[node]
            self.left[node] = (g + vec[0], c + vec[1], m + vec[2])

    def _fail(self, member: str, need: str, best: str, got: int = 0) -> None:
        """Keep the most telling failure: the deepest in the search, then the closest."""
        depth = len(self.result)
        old = self.failure
        if old is None or (depth, got) > (old.depth, old.got):
            self.failure = Shortfall(member, need, best, depth, got)

    # --- allowed nodes -----------------------------------------------------------------

    def allowed(self, demand: Demand) -> tuple[int, int]:
        """The node range ``[start, end)`` the demand may use: the intersection of the
        domains its bound pack scopes chose. Domains nest and are contiguous runs of node
        order, so the intersection is the innermost one, or empty."""
        start, end = 0, len(self.cluster)
        for i, domain in self.bound.items():
            if domain is not None and demand.member in self.scopes[i].members:
                s, e = self.cluster.span(self.scopes[i].level, domain)
                start, end = max(start, s), min(end, e)
        return start, max(start, end)

    # --- the search --------------------------------------------------------------------

    def run(self, k: int = 0) -> bool:
        self.steps += 1
        if self.steps > MAX_PLAN_STEPS:
            return False
        if k == len(self.order):
            self._extras()
            return True
        demand = self.order[k]
        scope_index = self._unbound_pack(demand)
        if scope_index is not None:
            for candidate in self._candidates(scope_index, demand):
                self.bound[scope_index] = candidate
                if self.run(k):
                    return True
                del self.bound[scope_index]
                if self.steps > MAX_PLAN_STEPS:
                    break
            return False
        log = self._lay_out(demand, demand.need)
        if log is None:
            return False
        if self.run(k + 1):
            return True
        self._undo(log)
        self.result.pop(demand.member, None)
        self._unspread(demand)
        return False

    def _unbound_pack(self, demand: Demand) -> int | None:
        for i, scope in enumerate(self.scopes):
            if scope.policy == "pack" and demand.member in scope.members and i not in self.bound:
                return i
        return None

    def _domain_sums(
        self, level: str, span: tuple[int, int], view: CapacityView, shape: Shape, taken: bool
    ) -> dict[str, int]:
        """Tasks of ``shape`` that fit in ``view`` per domain of ``level`` within ``span``,
        domains in node order; with this plan's own takes counted if ``taken``."""
        sums = view.domain_sums(level, *span, shape)
        if taken and self.left:
            fits = view.fits(shape)
            start, end = span
            domain_of = self.cluster.domain_ids(level)
            for node in self.left:
                if start <= node < end and fits[node]:
                    sums[domain_of[node]] += self.fit(node, shape) - fits[node]
        return sums

    def _candidates(self, scope_index: int, demand: Demand) -> list[str | None]:
        scope = self.scopes[scope_index]
        span = self.allowed(demand)
        fixed_domains = {self.cluster.domain_of(scope.level, n) for n in demand.fixed}
        sums = self._domain_sums(scope.level, span, self.view, demand.shape, True)
        now: dict[str, int] = {}
        if self.prefer is not None:
            now = self._domain_sums(scope.level, span, self.prefer, demand.shape, False)
        viable = [
            d
            for d in sums
            if sums[d] >= demand.need and (not fixed_domains or fixed_domains == {d})
        ]
        if scope.anchor is not None and scope.required:
            viable = [d for d in viable if d == scope.anchor]

        def key(d: str) -> tuple[int, int, int, str]:
            anchored = 0 if d == scope.anchor else 1
            waiting = max(0, demand.need - now[d]) if self.prefer is not None else 0
            return (anchored, waiting, sums[d] - demand.need, d)

        ordered: list[str | None] = list(sorted(viable, key=key)[:MAX_DOMAIN_CANDIDATES])
        if not viable:
            self._fail(
                demand.member,
                f"{demand.need}×{shape_text(demand.shape)} in one {scope.level}"
                + (f" ({scope.source} is in {scope.anchor})" if scope.anchor else ""),
                self._best_text(scope, sums),
                max(sums.values(), default=0),
            )
        if not scope.required:
            ordered.append(None)
        return ordered

    def _best_text(self, scope: Scope, sums: Mapping[str, int]) -> str:
        if not sums:
            return f"no {scope.level} is allowed"
        best = min(sums, key=lambda d: (-sums[d], d))
        placed = [m for m in self.result if m in scope.members]
        after = f" after {', '.join(placed)}" if placed else ""
        return f"best {scope.level} {best} has {sums[best]} free{after}"

    def _spread_scopes(self, demand: Demand) -> list[int]:
        return [
            i
            for i, s in enumerate(self.scopes)
            if s.policy == "spread" and demand.member in s.members
        ]

    def _node_order(self, start: int, end: int, shape: Shape) -> Iterator[int]:
        """Nodes of ``[start, end)`` in layout order: node order, or with a ``prefer``
        view, the nodes where a task fits now first (each part in node order)."""
        if self.prefer is None:
            return iter(range(start, end))
        # Fit counts are never negative: "fits now" is a count's truth. Both parts are
        # C-level passes (a plan in eventual capacity walks the whole cluster this way).
        now = self.prefer.fits(shape)[start:end]
        return chain(
            compress(range(start, end), now),
            compress(range(start, end), map(not_, now)),
        )

    def _fitting_order(self, start: int, end: int, shape: Shape) -> Iterator[int]:
        """`_node_order` without the nodes where nothing fits in the view (nothing fits
        there after this plan's takes either), skipped in C: a plan in eventual
        capacity, or in a busy cluster, would otherwise visit every node of its span."""
        fits = self.view.fits(shape)
        fitting = compress(range(start, end), fits[start:end])
        if self.prefer is None:
            return fitting
        now = self.prefer.fits(shape)
        fitting_now = compress(range(start, end), now[start:end])
        return chain(fitting_now, filterfalse(now.__getitem__, fitting))

    def _lay_out(
        self, demand: Demand, count: int, *, partial: bool = False
    ) -> list[tuple[int, Vec]] | None:
        """Put ``count`` tasks on allowed nodes (fixed ones first). None if they don't fit
        (unless ``partial``: then as many as fit)."""
        log: list[tuple[int, Vec]] = []
        existing = self.result.get(demand.member)
        chosen: list[int] = list(existing) if existing is not None else []
        start, end = self.allowed(demand)
        spreads = self._spread_scopes(demand)
        missing = count
        if existing is None:
            for node in demand.fixed:
                if not start <= node < end or self.fit(node, demand.shape) < 1:
                    self._fail(
                        demand.member,
                        f"its held task on {self.cluster.nodes[node].name}",
                        "the hold no longer fits the plan",
                    )
                    self._undo(log)
                    self._unspread_log(spreads, log)
                    return None
                self._take(node, demand.shape, 1, log)
                chosen.append(node)
                self._note_spread(spreads, node)
            missing = count - len(chosen)
        if spreads:
            placed = self._spread_out(demand, (start, end), spreads, missing, log, chosen)
        else:
            placed = 0
            fits, left = self.view.fits(demand.shape), self.left
            for node in self._fitting_order(start, end, demand.shape):
                if placed >= missing:
                    break
                have = fits[node]
                if not have:
                    continue  # nothing fits in the view, so nothing fits after takes
                if node in left:
                    have = fit_count(left[node], demand.shape)
                k = min(have, missing - placed)
                if k > 0:
                    self._take(node, demand.shape, k, log)
                    chosen.extend([node] * k)
                    placed += k
        if placed < missing and not partial:
            got = count - missing + placed
            need, best = self._shortfall_text(demand, count, got)
            self._fail(demand.member, need, best, got)
            self._undo(log)
            self._unspread_log(spreads, log)
            return None
        self.result[demand.member] = chosen
        return log

    def _shortfall_text(self, demand: Demand, count: int, got: int) -> tuple[str, str]:
        """ "8×{gpu:1} in one block" / "best block b3 has 5 free after trainer"."""
        what = f"{count}×{shape_text(demand.shape)}"
        bound = [
            (self.scopes[i], d)
            for i, d in sorted(self.bound.items())
            if d is not None and demand.member in self.scopes[i].members
        ]
        spreads = [self.scopes[i].level for i in self._spread_scopes(demand)]
        spread = f" spread over {'/'.join(spreads)}s" if spreads else ""
        if not bound:
            return f"{what}{spread}", f"{got} fit"
        scope, domain = max(bound, key=lambda b: self.cluster.depth(b[0].level))
        others = [m for m in self.result if m in scope.members and m != demand.member]
        after = f" after {', '.join(others)}" if others else ""
        return (
            f"{what} in one {scope.level}{spread}",
            f"best {scope.level} {domain} has {got} free{after}",
        )

    def _spread_out(
        self,
        demand: Demand,
        span: tuple[int, int],
        spreads: list[int],
        missing: int,
        log: list[tuple[int, Vec]],
        chosen: list[int],
    ) -> int:
        """One task at a time into the least-used domain of the first spread scope (then
        the first by id) that has room; a required spread puts at most one task of the
        scope in a domain.

        Works on the domains, not the nodes: only a domain where the view fits a task
        can have room (this plan's own takes only lower a node's count below the
        view's, `fit`), which the view's sums per domain tell (a summary's, where the
        ledger keeps one); and a domain's nodes are listed, and its first node with
        room looked for, only when it is the least used one left. In a busy cluster most
        domains are full, in an idle one the first domain looked at has room: either
        way a task costs about the number of domains, not of nodes."""
        lead = self.scopes[spreads[0]]
        shape = demand.shape
        sums = self.view.domain_sums(lead.level, *span, shape)
        ranges = {d: (s, e) for d, s, e in self.cluster.runs_within(lead.level, *span) if sums[d]}
        nodes_of: dict[str, list[int]] = {}  # a domain's nodes in layout order, when needed
        # Per domain, its first node with room (None: full), looked for when first
        # needed. Within this call fit counts only shrink (it only takes), and only in
        # the domain just taken from: elsewhere a later look finds what an earlier one
        # would have, and there the first node with room only moves forward.
        room: dict[str, int | None] = {}
        used = self.spread_used.setdefault(spreads[0], {})
        placed = 0
        while placed < missing:
            best: tuple[str, int] | None = None
            for domain in sorted(ranges, key=lambda d: (used.get(d, 0), d)):
                nodes = nodes_of.get(domain)
                if nodes is None:
                    nodes = nodes_of[domain] = list(self._node_order(*ranges[domain], shape))
                if not self._spread_ok(spreads, nodes[0]):
                    continue
                if domain in room:
                    at = room[domain]
                else:
                    at = room[domain] = self._first_room(nodes, 0, shape)
                if at is not None:
                    best = (domain, at)
                    break
            if best is None:
                break
            domain, at = best
            node = nodes_of[domain][at]
            self._take(node, shape, 1, log)
            chosen.append(node)
            self._note_spread(spreads, node)
            room[domain] = self._first_room(nodes_of[domain], at, shape)
            placed += 1
        return placed

    def _first_room(self, nodes: list[int], at: int, shape: Shape) -> int | None:
        """The position of the first node from ``at`` on where a task fits, or None."""
        while at < len(nodes):
            if self.fit(nodes[at], shape) > 0:
                return at
            at += 1
        return None

    def _spread_ok(self, spreads: list[int], node: int) -> bool:
        for i in spreads:
            scope = self.scopes[i]
            domain = self.cluster.domain_of(scope.level, node)
            if scope.required and (
                self.spread_used.get(i, {}).get(domain, 0) > 0 or domain in scope.avoid
            ):
                return False
        return True

    def _note_spread(self, spreads: list[int], node: int, sign: int = 1) -> None:
        for i in spreads:
            domain = self.cluster.domain_of(self.scopes[i].level, node)
            used = self.spread_used.setdefault(i, {})
            used[domain] = used.get(domain, 0) + sign

    def _unspread_log(self, spreads: list[int], log: list[tuple[int, Vec]]) -> None:
        for node, _vec in log:
            self._note_spread(spreads, node, -1)

    def _unspread(self, demand: Demand) -> None:
        # Called after a member's layout is undone: recount spread use from the results.
        self.spread_used = {}
        for d in self.order:
            for node in self.result.get(d.member, []):
                self._note_spread(self._spread_scopes(d), node)

    def _extras(self) -> None:
        for demand in self.order:
            if demand.extra > 0:
                self._lay_out(demand, demand.extra, partial=True)


def plan_gang(
    cluster: Cluster,
    demands: Sequence[Demand],
    scopes: Sequence[Scope],
    view: CapacityView,
    prefer: CapacityView | None = None,
) -> Plan | Shortfall:
    """Place every demand's ``need`` tasks under every scope, or say why not.

    Members are laid out hardest first. Members without a GPU type are not backtracked
    over the nodes they may take, so one laid out first can take the only nodes a typed
    member could use; when a group mixes typed and untyped members and the first search
    fails, a second one lays the typed members out first. The answer when both fail is
    the first search's shortfall (what the pend reason has always said)."""
    return plan_with(_Search, cluster, demands, scopes, view, prefer)


def plan_with(
    search_class: type[_Search],
    cluster: Cluster,
    demands: Sequence[Demand],
    scopes: Sequence[Scope],
    view: CapacityView,
    prefer: CapacityView | None = None,
) -> Plan | Shortfall:
    """`plan_gang` searching with ``search_class`` (tests compare the search with a
    reference one, `tests/placement/oracles.py`)."""
    search = search_class(cluster, demands, scopes, view, prefer)
    if search.run():
        return Plan({m: list(nodes) for m, nodes in search.result.items()})
    typed_first = _typed_first(search.order)
    if typed_first is not None:
        retry = search_class(cluster, demands, scopes, view, prefer, typed_first)
        if retry.run():
            return Plan({m: list(nodes) for m, nodes in retry.result.items()})
    if search.failure is not None:
        return search.failure
    return Shortfall(search.order[0].member, "a plan", "search budget exhausted", 0)


def _typed_first(order: Sequence[Demand]) -> list[Demand] | None:
    """``order`` with the members that ask for a GPU type moved ahead of those that do
    not (each part keeping its order), or None if the group does not mix the two."""
    typed = [d for d in order if d.shape.gpu_type]
    if not typed or len(typed) == len(order):
        return None
    return typed + [d for d in order if not d.shape.gpu_type]
