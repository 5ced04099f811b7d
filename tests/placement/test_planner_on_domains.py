"""The gang search that works on domains decides as the one that walked every node.

Rack spreading rules out the domains where the view fits no task from the view's sums
per domain and looks into a domain's nodes only when it is the least used one left; a
layout visits only the nodes where a task fits in the view (ADR 0127). The reference,
`tests.placement.oracles.NodeByNodeSearch`, is the search as it was: it lists every
node of every domain and looks for each domain's first node with room up front.

Hypothesis draws uneven clusters, mostly busy (many full domains), with an overlay of
the group's own holds and a view of what is free now to prefer, and gangs with spread
scopes (required or not, some domains to avoid, at every level), pack scopes (some
anchored), held tasks, best-effort extras and GPU types. Plans and shortfalls must be
equal; how often a domain was ruled out by its sum, searched for room, or never looked
into is printed.
"""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from costart.domain.spec_types import Shape
from costart.placement.capacity import CapacityView, Vec
from costart.placement.cluster import Cluster
from costart.placement.constraints import Scope
from costart.placement.planner import Demand, _Search, plan_gang

from .oracles import node_by_node_plan
from .test_domain_sums import uneven_cluster

SHAPES = [
    Shape(gpu=1, cpu=8, mem_gb=64),
    Shape(gpu=2, cpu=16, mem_gb=128),
    Shape(gpu=8),
    Shape(cpu=16, mem_gb=100),
    Shape(gpu=1, gpu_type="H100"),
]
LEVELS = ["zone", "block", "rack", "node"]
WAYS: Counter[str] = Counter()


def busy(cluster: Cluster, rng: random.Random, full: float) -> list[Vec]:
    """Free capacity per node: a share ``full`` of whole racks full, the rest random."""
    racks = {d for d in cluster.domains("rack") if rng.random() < full}
    out: list[Vec] = []
    for i, node in enumerate(cluster.nodes):
        if cluster.domain_of("rack", i) in racks:
            out.append((0, rng.choice([0, 4]), 0))
        else:
            out.append(
                (rng.randint(0, node.gpu), rng.randint(0, node.cpu), rng.randint(0, node.mem_gb))
            )
    return out


def less(base: list[Vec], rng: random.Random) -> list[Vec]:
    """Some nodes' capacity lowered (what is free now, below what is eventually)."""
    return [
        (rng.randint(0, g), rng.randint(0, c), rng.randint(0, m))
        if rng.random() < 0.5
        else (g, c, m)
        for g, c, m in base
    ]


def a_gang(cluster: Cluster, rng: random.Random) -> tuple[list[Demand], list[Scope]]:
    names = [f"m{i}" for i in range(rng.randint(1, 3))]
    demands = []
    for order, name in enumerate(names):
        fixed = tuple(rng.randrange(len(cluster)) for _ in range(rng.choice([0, 0, 0, 0, 0, 1])))
        demands.append(
            Demand(
                name,
                rng.choice(SHAPES),
                len(fixed) + rng.randint(1, 6),
                fixed,
                rng.choice([0, 0, 2]),
                order,
            )
        )
    scopes = []
    for _ in range(rng.choice([1, 1, 2])):
        members = tuple(rng.sample(names, rng.randint(1, len(names))))
        level = rng.choice(LEVELS)
        if rng.random() < 0.6:
            domains = cluster.domains(level)
            avoid = tuple(rng.sample(domains, min(len(domains), rng.randint(0, 2))))
            scopes.append(Scope(members, level, "spread", rng.random() < 0.3, "test", avoid=avoid))
        else:
            level = rng.choice(LEVELS[:3])
            anchor = rng.choice(cluster.domains(level)) if rng.random() < 0.3 else None
            scopes.append(Scope(members, level, "pack", rng.random() < 0.6, "test", anchor))
    return demands, scopes


@pytest.fixture(scope="module", autouse=True)
def _print_ways() -> Any:
    yield
    print(f"\nspreading on domains: {dict(sorted(WAYS.items()))}")
    assert WAYS["domain ruled out by its sum"] > 100
    assert WAYS["domain searched for room"] > 100
    assert WAYS["domain never looked into"] > 100
    assert WAYS["plan"] > 100 and WAYS["shortfall"] > 100


@pytest.fixture(autouse=True)
def _count_ways(monkeypatch: pytest.MonkeyPatch) -> None:
    spread_out, first_room = _Search._spread_out, _Search._first_room
    searched: list[set[int]] = []

    def counted_spread(search: _Search, demand: Demand, span: Any, spreads: Any, *rest: Any) -> Any:
        level = search.scopes[spreads[0]].level
        sums = search.view.domain_sums(level, *span, demand.shape)
        searched.append(set())
        placed = spread_out(search, demand, span, spreads, *rest)
        looked = searched.pop()
        ruled_out = sum(1 for total in sums.values() if not total)
        WAYS["domain ruled out by its sum"] += ruled_out
        WAYS["domain searched for room"] += len(looked)
        WAYS["domain never looked into"] += len(sums) - ruled_out - len(looked)
        return placed

    def counted_room(search: _Search, nodes: list[int], at: int, shape: Shape) -> Any:
        if searched and nodes:
            searched[-1].add(nodes[0])
        return first_room(search, nodes, at, shape)

    monkeypatch.setattr(_Search, "_spread_out", counted_spread)
    monkeypatch.setattr(_Search, "_first_room", counted_room)


@settings(max_examples=400, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from([0.0, 0.3, 0.8]))
def test_the_search_on_domains_plans_as_the_node_by_node_one(seed: int, full: float) -> None:
    rng = random.Random(seed)
    cluster = uneven_cluster(rng)
    n = len(cluster)
    base = busy(cluster, rng, full)
    overlay = {rng.randrange(n): (rng.randint(0, 4), rng.randint(0, 16), 64) for _ in range(2)}
    view = CapacityView(cluster, base, overlay)
    prefer = CapacityView(cluster, less(base, rng), {}) if rng.random() < 0.6 else None
    demands, scopes = a_gang(cluster, rng)
    got = plan_gang(cluster, demands, scopes, view, prefer)
    WAYS["plan" if type(got).__name__ == "Plan" else "shortfall"] += 1
    reference = node_by_node_plan(
        cluster, demands, scopes, CapacityView(cluster, base, overlay), prefer
    )
    assert got == reference
