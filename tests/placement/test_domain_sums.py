"""Fit counts summed per topology domain (`DomainSums`) equal a recount, and the planner
decides the same reading them as summing the nodes.

* Random clusters (zone/block/rack, uneven), random counts moved node by node: after
  every move each domain's sum equals the sum of its nodes' counts, and ``within``
  (whole domains from the summary, clipped ones summed) equals the plain per-node sum
  over random node ranges.
* A view with a summary (and an overlay of a group's own holds) answers `domain_sums`
  as the plain view does.
* The seeded workloads decide the same on the incremental step (summaries read) as on
  the plain step (nodes summed), with how often each way was taken printed.
* The table behind the fit counts (`FitTables`) counts as `fit_counts` does.
The ledgers' carried and per-session summaries are compared with a recount after every
sync in `test_session_ledger_current.py`.
"""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from costart.domain.spec_types import Shape
from costart.placement import Cluster, Node
from costart.placement.capacity import CapacityView, DomainSummary, Vec, fit_counts
from costart.placement.incremental.domain_sums import DomainSums
from costart.placement.incremental.fit_table import FitTables

from .workload import digests, run_workload

SHAPES = [Shape(gpu=1, cpu=8, mem_gb=64), Shape(gpu=8), Shape(cpu=16, mem_gb=100), Shape()]


def uneven_cluster(rng: random.Random) -> Cluster:
    nodes = []
    for z in range(rng.randint(1, 3)):
        for b in range(rng.randint(1, 3)):
            for r in range(rng.randint(1, 4)):
                for n in range(rng.randint(1, 5)):
                    gpu = rng.choice([8, 4, 0])
                    nodes.append(
                        Node(
                            f"z{z}-b{b}-r{r}-n{n}",
                            (f"z{z}", f"b{b}", f"r{r}"),
                            gpu=gpu,
                            cpu=rng.choice([32, 128]),
                            mem_gb=rng.choice([256, 1024]),
                            gpu_type=rng.choice(["H100", "A100"]),
                        )
                    )
    return Cluster(["zone", "block", "rack"], nodes)


def recount(cluster: Cluster, fits: list[int]) -> dict[str, dict[str, int]]:
    """Per level, per domain: its nodes' counts summed one by one."""
    out: dict[str, dict[str, int]] = {}
    for level in cluster.levels:
        sums: dict[str, int] = {}
        for node, count in enumerate(fits):
            domain = cluster.domain_of(level, node)
            sums[domain] = sums.get(domain, 0) + count
        out[level] = sums
    return out


def plain_within(cluster: Cluster, level: str, start: int, end: int, fits: list[int]) -> Any:
    return {d: sum(fits[s:e]) for d, s, e in cluster.runs_within(level, start, end)}


def test_domain_sums_equal_a_recount_after_every_move(capsys: pytest.CaptureFixture[str]) -> None:
    """A session's sums start from carried ones and move node by node; levels are made
    when first asked over a wide range."""
    ways: Counter[str] = Counter()
    for seed in range(300):
        rng = random.Random(seed)
        cluster = uneven_cluster(rng)
        n = len(cluster)
        base_fits = [rng.randint(0, 8) for _ in range(n)]
        base = DomainSums(cluster)
        if rng.random() < 0.5:
            base.level(rng.choice(cluster.levels), base_fits)  # some carried already
        fits, moved = list(base_fits), set[int]()
        sums = DomainSums(cluster, base, base_fits, moved)
        for _ in range(rng.randint(1, 40)):
            node, count = rng.randrange(n), rng.randint(0, 8)
            moved.add(node)
            sums.add(node, count - fits[node])
            fits[node] = count
            assert sums.by_level == built(sums, recount(cluster, fits)), seed
            level = rng.choice(cluster.levels)
            start = rng.randrange(n)
            end = rng.randint(start, n)
            had = level in sums.by_level
            got = sums.within(level, start, end, fits)
            assert got == plain_within(cluster, level, start, end, fits), seed
            assert list(got) == [d for d, _, _ in cluster.runs_within(level, start, end)]
            if level not in sums.by_level:
                ways["few domains: nodes summed"] += 1
            else:
                ways["level read" if had else "level made from the carried sums"] += 1
            assert sums.by_level == built(sums, recount(cluster, fits)), seed
        # The carried sums are their own: the session's moves never reached them.
        assert base.by_level == built(base, recount(cluster, base_fits))
        assert DomainSums.of(cluster, fits).by_level == recount(cluster, fits)
    with capsys.disabled():
        print(f"\ndomain sums: {dict(sorted(ways.items()))}")
    assert min(ways.values()) > 100


def built(sums: DomainSums, full: dict[str, dict[str, int]]) -> dict[str, dict[str, int]]:
    """``full`` for the levels ``sums`` has made."""
    return {level: full[level] for level in sums.by_level}


class _Summary:
    """A `DomainSummary` over one view's shared counts, counting its answers."""

    def __init__(self, cluster: Cluster, fits: list[int]) -> None:
        self.sums = DomainSums.of(cluster, fits)
        self.asked = 0

    def within(self, level: str, start: int, end: int, fits: Any) -> dict[str, int]:
        self.asked += 1
        return self.sums.within(level, start, end, fits)


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_a_view_with_a_summary_sums_domains_as_the_plain_view(seed: int) -> None:
    rng = random.Random(seed)
    cluster = uneven_cluster(rng)
    n = len(cluster)
    base: list[Vec] = [
        (rng.randint(0, node.gpu), rng.randint(0, node.cpu), rng.randint(0, node.mem_gb))
        for node in cluster.nodes
    ]
    overlay = {rng.randrange(n): (rng.randint(0, 4), rng.randint(0, 16), 64) for _ in range(3)}
    shape = rng.choice([*SHAPES, Shape(gpu=2, gpu_type="H100")])
    shared = {shape: fit_counts(cluster, base, shape)}
    summary = _Summary(cluster, shared[shape])

    def summaries(asked: Shape) -> DomainSummary | None:
        return summary if asked == shape else None

    summed = CapacityView(cluster, base, overlay, dict(shared), summary=summaries)
    plain = CapacityView(cluster, base, overlay)
    for level in (*cluster.levels, "node"):
        start = rng.randrange(n)
        end = rng.randint(start, n)
        assert summed.domain_sums(level, start, end, shape) == plain.domain_sums(
            level, start, end, shape
        )
    assert summary.asked == len(cluster.levels)  # the node level sums its nodes


def test_the_seeded_workloads_decide_the_same_reading_summaries_as_summing_nodes(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    ways: Counter[str] = Counter()
    domain_sums = CapacityView.domain_sums

    def counted(view: CapacityView, level: str, start: int, end: int, shape: Shape) -> Any:
        summary = view._summary(shape) if view._summary is not None else None
        if level not in view.cluster.levels:
            ways["node level: nodes summed"] += 1
        elif summary is None:
            ways["no summary kept: nodes summed"] += 1
        else:
            ways["summary read"] += 1
        return domain_sums(view, level, start, end, shape)

    monkeypatch.setattr(CapacityView, "domain_sums", counted)
    for seed in (2, 8, 13, 21):
        assert digests(run_workload(seed)) == digests(run_workload(seed, plain=True)), seed
    with capsys.disabled():
        print(f"\ndomain sums asked: {dict(sorted(ways.items()))}")
    assert ways["summary read"] > 50
    assert ways["no summary kept: nodes summed"] > 50  # the plain step's views


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_fit_counts_by_table_equal_the_plain_pass(seed: int) -> None:
    rng = random.Random(seed)
    cluster = uneven_cluster(rng)
    tables = FitTables()
    for _ in range(3):  # the tables kept from one base to the next
        base: list[Vec] = [
            (rng.randint(0, node.gpu), rng.randint(0, node.cpu), rng.randint(0, node.mem_gb))
            for node in cluster.nodes
        ]
        for shape in [*SHAPES, Shape(gpu=1, gpu_type="A100")]:
            assert tables.fit_counts(cluster, base, shape) == fit_counts(cluster, base, shape)
