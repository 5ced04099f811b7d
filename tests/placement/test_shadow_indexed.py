"""The indexed capacity profile (`costart.placement.shadow.indexed`, ADR 0143) against
the plain one on random profiles: the same free capacity over every span, for every
owner left out (and the same release times and holds), after uses are added and
removed; a gang ruled out only where the search fails; and the same plans, nodes and
bases for a whole queue."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from costart.domain.expected_runtime import ExpectedRuntime
from costart.domain.spec_types import Shape
from costart.placement import Cluster, Node
from costart.placement.planner import Demand, Plan, plan_gang
from costart.placement.shadow import CapacityProfile, ShadowPlanner, Use, Waiting, plan_queue
from costart.placement.shadow.indexed import IndexedProfile

H = 3_600_000_000_000
NOW = 5 * H
OWNERS = ("a", "b", "c", "d")
PATHS: Counter[str] = Counter()


def _cluster(nodes: int) -> Cluster:
    return Cluster(
        ["rack"],
        [
            Node(
                f"n{i}", (f"r{i % 2}",), gpu=8, cpu=64, mem_gb=256, gpu_type=("a100", "h100")[i % 2]
            )
            for i in range(nodes)
        ],
    )


@st.composite
def _profiles(draw: st.DrawFn) -> tuple[Cluster, list[Use]]:
    nodes = draw(st.integers(1, 6))
    cluster = _cluster(nodes)
    uses = []
    for _ in range(draw(st.integers(0, 14))):
        start = draw(st.integers(0, 12)) * H
        length = draw(st.one_of(st.none(), st.integers(0, 10)))
        vec = (draw(st.integers(0, 5)), draw(st.integers(0, 40)), draw(st.integers(0, 200)))
        uses.append(
            Use(
                draw(st.integers(0, nodes - 1)),
                vec,
                start,
                None if length is None else start + length * H,
                draw(st.sampled_from(OWNERS)),
                "limit",
            )
        )
    return cluster, uses


def _both(cluster: Cluster, uses: list[Use]) -> tuple[CapacityProfile, IndexedProfile]:
    capacity = [(n.gpu, n.cpu, n.mem_gb) for n in cluster.nodes]
    plain = CapacityProfile(list(capacity), NOW)
    plain.add_all(uses)
    return plain, IndexedProfile.of(plain)


_SPANS = st.tuples(st.integers(0, 20), st.one_of(st.none(), st.integers(0, 10)))


@settings(max_examples=200, deadline=None)
@given(_profiles(), st.lists(_SPANS, min_size=1, max_size=6), _profiles())
def test_free_capacity_is_the_plain_profiles_over_every_span_and_after_changes(
    profile: tuple[Cluster, list[Use]],
    spans: list[tuple[int, int | None]],
    more: tuple[Cluster, list[Use]],
) -> None:
    cluster, uses = profile
    plain, indexed = _both(cluster, uses)

    def compare() -> None:
        assert indexed.releases(30 * H) == plain.releases(30 * H)
        assert [indexed.held(o) for o in OWNERS] == [plain.held(o) for o in OWNERS]
        for start_h, length_h in spans:
            start = start_h * H
            end = None if length_h is None else start + length_h * H
            for ignore in (None, *OWNERS):
                assert indexed.free_over(start, end, ignore) == plain.free_over(start, end, ignore)
                view = indexed.view(cluster, start, end, ignore)
                assert view.avail_list() == plain.free_over(start, end, ignore)
                for shape in (Shape(gpu=2, gpu_type="h100"), Shape(cpu=8, mem_gb=64)):
                    assert view.fits(shape) == plain.view(cluster, start, end, ignore).fits(shape)

    compare()
    # Work added on nodes that exist, then an owner's uses removed (converted/released).
    for use in more[1]:
        if use.node < len(cluster):
            plain.add(use)
            indexed.add(use)
            PATHS["use added"] += 1
    compare()
    for owner in OWNERS[:2]:
        assert indexed.remove(owner) == plain.remove(owner)
    compare()
    assert indexed.uses == plain.uses
    for path, n in indexed.reads.items():
        PATHS[f"read {path}"] += n


@settings(max_examples=200, deadline=None)
@given(
    _profiles(),
    st.integers(5, 20),
    st.one_of(st.none(), st.integers(1, 8)),
    st.lists(
        st.tuples(st.integers(0, 8), st.integers(0, 64), st.integers(0, 256), st.integers(0, 6)),
        min_size=1,
        max_size=3,
    ),
    st.booleans(),
)
def test_a_gang_is_ruled_out_only_where_the_search_fails(
    profile: tuple[Cluster, list[Use]],
    start_h: int,
    length_h: int | None,
    members: list[tuple[int, int, int, int]],
    typed: bool,
) -> None:
    cluster, uses = profile
    plain, indexed = _both(cluster, uses)
    demands = [
        Demand(f"m{i}", Shape(gpu=g, cpu=c, mem_gb=m, gpu_type="a100" if typed and g else None), k)
        for i, (g, c, m, k) in enumerate(members)
    ]
    start = start_h * H
    end = None if length_h is None else start + length_h * H
    ruled_out = indexed.cannot_fit(demands, start, end, "a")
    found = plan_gang(cluster, demands, [], plain.view(cluster, start, end, "a"))
    if ruled_out:
        assert not isinstance(found, Plan)
        PATHS["ruled out (search fails)"] += 1
    else:
        PATHS["searched: " + ("fits" if isinstance(found, Plan) else "fails")] += 1


@settings(max_examples=200, deadline=None)
@given(
    _profiles(),
    st.lists(st.integers(5, 20), min_size=1, max_size=10),  # from now: batched
    st.one_of(st.none(), st.just(0), st.integers(0, 8)),
    st.lists(
        st.tuples(st.integers(0, 8), st.integers(0, 64), st.integers(0, 256), st.integers(0, 6)),
        min_size=1,
        max_size=3,
    ),
    st.sampled_from((None, "e", "a")),  # "e" has no uses: read at once
)
def test_candidates_ruled_out_at_once_are_those_ruled_out_one_at_a_time(
    profile: tuple[Cluster, list[Use]],
    starts_h: list[int],
    length_h: int | None,
    members: list[tuple[int, int, int, int]],
    ignore: str | None,
) -> None:
    cluster, uses = profile
    _, indexed = _both(cluster, uses)
    demands = [
        Demand(f"m{i}", Shape(gpu=g, cpu=c, mem_gb=m), k) for i, (g, c, m, k) in enumerate(members)
    ]
    starts = [h * H for h in starts_h]
    runtime = None if length_h is None else length_h * H

    def compare() -> None:
        batched = indexed.reads["batched"]
        at_once = indexed.ruled_out(demands, starts, runtime, ignore)
        one_by_one = [
            indexed.cannot_fit(demands, s, None if runtime is None else s + runtime, ignore)
            for s in starts
        ]
        assert at_once == one_by_one
        took = "batched" if indexed.reads["batched"] > batched else "one at a time"
        PATHS[f"rule-out {took}: " + ("some out" if any(at_once) else "none out")] += 1

    compare()
    # After a release (work ends: timelines change), and after new work.
    indexed.remove("b")
    compare()
    indexed.add(Use(0, (8, 64, 256), NOW, NOW + 9 * H, "b", "limit"))
    compare()


def test_a_run_of_no_length_is_ruled_out_by_work_starting_at_its_start() -> None:
    # As `free_over`: a span of no length still reads the use at its start.
    cluster = _cluster(1)
    _, indexed = _both(cluster, [Use(0, (8, 0, 0), NOW + H, NOW + 3 * H, "b", "limit")])
    demands = [Demand("m", Shape(gpu=1), 1)]
    starts = [NOW, NOW + H, NOW + 2 * H, NOW + 3 * H]
    assert indexed.ruled_out(demands, starts, 0, None) == [False, True, True, False]
    assert indexed.reads["batched"] == 1


@settings(max_examples=150, deadline=None)
@given(
    _profiles(),
    st.lists(
        st.tuples(
            st.integers(1, 4),
            st.sampled_from([1, 2, 4, 8]),
            st.one_of(st.none(), st.integers(1, 6)),
        ),
        min_size=1,
        max_size=6,
    ),
)
def test_a_queue_is_planned_as_the_plain_profile_plans_it(
    profile: tuple[Cluster, list[Use]], gangs: list[tuple[int, int, int | None]]
) -> None:
    cluster, uses = profile
    plain, _ = _both(cluster, uses)
    queue = [
        Waiting(
            f"g{i}",
            [Demand("w", Shape(gpu=gpu, cpu=4), tasks)],
            [],
            ExpectedRuntime(None, "unknown")
            if hours is None
            else ExpectedRuntime(hours * H, "limit"),
        )
        for i, (tasks, gpu, hours) in enumerate(gangs)
    ]
    fast = plan_queue(cluster, plain, queue)
    slow = ShadowPlanner(cluster, plain.copy())
    for group in queue:
        slow.plan(group)
    assert fast.starts == slow.starts
    assert fast.profile.uses == slow.profile.uses
    assert isinstance(fast.profile, IndexedProfile)
    for path, n in fast.profile.reads.items():
        PATHS[f"planner read {path}"] += n
    PATHS[
        "planned later"
        if any(s.start_ns not in (None, NOW) for s in fast.starts.values())
        else "planned now or never"
    ] += 1


@pytest.fixture(scope="module", autouse=True)
def _paths() -> Iterator[None]:
    yield
    print(f"\nindexed profile paths taken: {dict(sorted(PATHS.items()))}")


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.tuples(st.integers(0, 5), st.integers(0, 40), st.integers(0, 200)),
            st.integers(0, 12),
            st.one_of(st.none(), st.integers(0, 10)),
        ),
        min_size=1,
        max_size=4,
    ),
    st.lists(st.sampled_from(("same", "vec", "start", "end", "owner", "order")), min_size=2),
)
def test_nodes_whose_uses_differ_in_one_field_read_their_own_capacity(
    template: list[tuple[tuple[int, int, int], int, int | None]],
    changes: list[str],
) -> None:
    # Nodes a gang spans share one list of uses, and the index makes their step function
    # once: a node whose list differs in any one field (or only in order) is its own.
    nodes = len(changes)
    cluster = _cluster(nodes)
    uses = []
    for node, change in enumerate(changes):
        own = [
            Use(node, vec, start * H, None if length is None else (start + length) * H, "a")
            for vec, start, length in template
        ]
        first = own[0]
        if change == "vec":
            own[0] = first._replace(vec=(first.vec[0] + 1, first.vec[1], first.vec[2]))
        elif change == "start":
            own[0] = first._replace(start_ns=first.start_ns + H)
        elif change == "end":
            own[0] = first._replace(end_ns=None if first.end_ns is None else first.end_ns + H)
        elif change == "owner":
            own[0] = first._replace(owner="b")
        elif change == "order":
            own.reverse()
        uses += own
        PATHS[f"uses like the first node's but {change}"] += 1
    plain, indexed = _both(cluster, uses)
    # Every span between two times where some use changes (and without end).
    bounds = plain.bounds()
    for start, end in [(a, b) for a in bounds for b in (*bounds, None) if b is None or b > a]:
        for ignore in (None, "b"):
            assert indexed.free_over(start, end, ignore) == plain.free_over(start, end, ignore)
            view = indexed.view(cluster, start, end, ignore)
            assert view.avail_list() == plain.free_over(start, end, ignore)


@settings(max_examples=200, deadline=None)
@given(_profiles(), _profiles())
def test_uses_added_together_are_kept_as_added_one_at_a_time(
    profile: tuple[Cluster, list[Use]], more: tuple[Cluster, list[Use]]
) -> None:
    # `add_all` appends in one pass; `add` one use at a time is the plain way. Starts
    # before now count from now, and uses that ended by then are dropped, both ways.
    cluster, uses = profile
    capacity = [(n.gpu, n.cpu, n.mem_gb) for n in cluster.nodes]
    extra = [u for u in more[1] if u.node < len(cluster)]
    for kind in (CapacityProfile, IndexedProfile):
        together, one_by_one = kind(list(capacity), NOW), kind(list(capacity), NOW)
        together.add_all(uses)
        together.add_all(extra)
        for use in uses + extra:
            one_by_one.add(use)
        assert together.uses == one_by_one.uses
        assert together.releases(30 * H) == one_by_one.releases(30 * H)
        assert [together.held(o) for o in OWNERS] == [one_by_one.held(o) for o in OWNERS]
        for start in (NOW, NOW + 3 * H):
            assert together.free_over(start, None) == one_by_one.free_over(start, None)
        PATHS[f"added together ({kind.__name__})"] += 1
        before = sum(1 for u in uses + extra if u.start_ns < NOW)
        PATHS["some start before now" if before else "all start from now"] += 1
