"""The shadow-time planner (`costart.placement.shadow`, ADR 0107): each waiting group's
earliest start in capacity-in-time, and whether lower work may start now without
delaying a planned start. Pure: same input, same plan; never overcommitted."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from costart.domain.expected_runtime import ExpectedRuntime
from costart.domain.spec_types import Shape
from costart.placement import Cluster, Node
from costart.placement.planner import Demand
from costart.placement.shadow import (
    CapacityProfile,
    ShadowPlanner,
    Use,
    Waiting,
    admits,
    plan_queue,
)

H = 3_600_000_000_000


def _cluster(nodes: int, gpu: int = 8) -> Cluster:
    return Cluster(
        ["rack"], [Node(f"n{i}", ("r0",), gpu=gpu, cpu=64, mem_gb=512) for i in range(nodes)]
    )


def _profile(cluster: Cluster, uses: Sequence[Use] = (), now: int = 0) -> CapacityProfile:
    profile = CapacityProfile([(n.gpu, n.cpu, n.mem_gb) for n in cluster.nodes], now)
    profile.add_all(uses)
    return profile


def _gang(name: str, tasks: int, gpu: int = 8, hours: float | None = 1.0) -> Waiting:
    runtime = (
        ExpectedRuntime(None, "unknown")
        if hours is None
        else ExpectedRuntime(int(hours * H), "limit")
    )
    return Waiting(name, [Demand("w", Shape(gpu=gpu), tasks)], [], runtime)


def _busy(
    node: int, gpu: int, end_h: float | None, owner: str = "run", basis: str = "limit"
) -> Use:
    end = None if end_h is None else int(end_h * H)
    return Use(node, (gpu, 0, 0), 0, end, owner, basis)  # type: ignore[arg-type]


def test_a_gang_is_planned_when_the_running_work_ends_by_its_limit() -> None:
    cluster = _cluster(2)
    profile = _profile(cluster, [_busy(0, 8, 2.0), _busy(1, 4, 1.0)])
    start = plan_queue(cluster, profile, [_gang("big", 2)]).starts["big"]
    assert start.start_ns == 2 * H and start.end_ns == 3 * H
    assert start.nodes == {"w": [0, 1]} and start.basis == "limit"


def test_a_gang_that_fits_now_starts_now_and_one_behind_unknown_ends_is_unplanned() -> None:
    cluster = _cluster(2)
    now = plan_queue(cluster, _profile(cluster), [_gang("g", 2)]).starts["g"]
    assert (now.start_ns, now.basis) == (0, "now")
    stuck = plan_queue(cluster, _profile(cluster, [_busy(0, 8, None)]), [_gang("g", 2)])
    assert stuck.starts["g"].start_ns is None and stuck.starts["g"].unplanned == "window"


def test_the_plan_rests_on_an_estimate_when_it_waits_for_one() -> None:
    cluster = _cluster(2)
    profile = _profile(cluster, [_busy(0, 8, 1.0), _busy(1, 8, 2.0, basis="estimate")])
    assert plan_queue(cluster, profile, [_gang("g", 2)]).starts["g"].basis == "estimate"


def test_later_groups_plan_around_earlier_plans() -> None:
    cluster = _cluster(2)
    profile = _profile(cluster, [_busy(0, 8, 2.0)])
    planner = plan_queue(cluster, profile, [_gang("big", 2, hours=1), _gang("one", 1, hours=3)])
    # n1 is free now but "big" needs it from 2h: a 3h job cannot start there before
    # big ends (3h) — n0 frees at 2h but big takes it then too.
    assert planner.starts["big"].start_ns == 2 * H
    assert planner.starts["one"].start_ns == 3 * H
    short = plan_queue(cluster, profile, [_gang("big", 2, hours=1), _gang("one", 1, hours=1.5)])
    assert short.starts["one"].start_ns == 0 and short.starts["one"].nodes == {"w": [1]}


def test_depth_and_window_bound_the_plan() -> None:
    cluster = _cluster(2)
    profile = _profile(cluster, [_busy(0, 8, 30.0)])
    queue = [_gang("a", 1), _gang("b", 1), _gang("c", 2)]
    deep = plan_queue(cluster, profile, queue, depth=2)
    assert deep.starts["a"].start_ns == 0 and deep.starts["b"].start_ns == 1 * H
    assert deep.starts["c"].start_ns is None and deep.starts["c"].unplanned == "depth"
    near = plan_queue(cluster, profile, queue, window_ns=24 * H)
    assert near.starts["c"].start_ns is None and near.starts["c"].unplanned == "window"
    far = plan_queue(cluster, profile, queue, window_ns=48 * H)
    assert far.starts["c"].start_ns == 30 * H
    with pytest.raises(ValueError, match="negative"):
        ShadowPlanner(cluster, profile, depth=-1)


def test_lower_work_may_start_only_if_it_ends_before_the_plans_it_would_delay() -> None:
    cluster = _cluster(2)
    planner = plan_queue(cluster, _profile(cluster, [_busy(0, 8, 2.0)]), [_gang("big", 2)])
    profile = planner.profile
    two_h, three_h = ExpectedRuntime(2 * H, "limit"), ExpectedRuntime(3 * H, "estimate")
    assert admits(profile, {1: (8, 0, 0)}, two_h) == (("limit", 2 * H))
    assert admits(profile, {1: (8, 0, 0)}, three_h) is None  # would delay big
    assert admits(profile, {1: (8, 0, 0)}, ExpectedRuntime(None, "unknown")) is None
    # Capacity big does not need is free to anyone, for as long as it runs.
    wide = plan_queue(cluster, _profile(cluster), [_gang("half", 2, gpu=4)])
    assert wide.starts["half"].start_ns == 0 and wide.starts["half"].nodes == {"w": [0, 0]}
    assert admits(wide.profile, {1: (8, 0, 0)}, ExpectedRuntime(None, "unknown")) == (
        "unknown",
        None,
    )
    assert admits(wide.profile, {0: (1, 0, 0)}, ExpectedRuntime(None, "unknown")) is None


def test_what_a_planned_group_holds_is_its_own_until_its_start_and_lendable() -> None:
    cluster = _cluster(2)
    held = Use(1, (8, 0, 0), 0, None, "big")  # big holds n1 (no end: until it starts)
    planner = plan_queue(cluster, _profile(cluster, [_busy(0, 8, 2.0), held]), [_gang("big", 2)])
    assert planner.starts["big"].start_ns == 2 * H and planner.starts["big"].basis == "limit"
    assert planner.profile.overcommitted() is None  # the hold ends where the plan starts
    one_h = ExpectedRuntime(H, "limit")
    assert admits(planner.profile, {1: (8, 0, 0)}, one_h) is None  # held: not free to all
    assert admits(planner.profile, {1: (8, 0, 0)}, one_h, lender="big") == ("limit", H)
    assert admits(planner.profile, {1: (8, 0, 0)}, ExpectedRuntime(3 * H, "limit"), "big") is None


def test_the_same_input_gives_the_same_plan_in_any_order_of_its_uses() -> None:
    cluster = _cluster(4)
    uses = [_busy(i % 4, 2 + i % 3, 0.5 + i * 0.25, owner=f"r{i}") for i in range(10)]
    queue = [_gang("a", 3), _gang("b", 2, gpu=4, hours=2), _gang("c", 4, gpu=2)]
    first = plan_queue(cluster, _profile(cluster, uses), queue).starts
    for shuffled in (list(reversed(uses)), uses[3:] + uses[:3]):
        assert plan_queue(cluster, _profile(cluster, shuffled), queue).starts == first
    assert plan_queue(cluster, _profile(cluster, uses), queue).starts == first


# --- properties --------------------------------------------------------------------

PATHS: Counter[str] = Counter()


@st.composite
def _scenarios(draw: st.DrawFn) -> tuple[Cluster, list[Use], list[Waiting]]:
    nodes = draw(st.integers(1, 4))
    cluster = _cluster(nodes)
    uses = []
    for i in range(draw(st.integers(0, 8))):
        node = draw(st.integers(0, nodes - 1))
        end = draw(st.one_of(st.none(), st.integers(1, 12)))
        uses.append(
            Use(
                node,
                (draw(st.integers(1, 4)), 0, 0),
                0,
                None if end is None else end * H,
                f"r{i}",
                "limit",
            )
        )
    queue = []
    for i in range(draw(st.integers(1, 5))):
        hours = draw(st.one_of(st.none(), st.integers(1, 6)))
        queue.append(
            _gang(f"g{i}", draw(st.integers(1, nodes)), draw(st.sampled_from([1, 2, 4, 8])), hours)
        )
    return cluster, uses, queue


def _within_capacity(cluster: Cluster, uses: list[Use]) -> list[Use]:
    """Keep the uses that fit now (running work never exceeds a node)."""
    profile = _profile(cluster)
    kept = []
    for use in uses:
        if profile.fits([use]):
            profile.add(use)
            kept.append(use)
    return kept


@settings(max_examples=150, deadline=None)
@given(_scenarios(), st.integers(1, 6))
def test_a_plan_never_overcommits_and_never_starts_before_its_capacity_frees(
    scenario: tuple[Cluster, list[Use], list[Waiting]], depth: int
) -> None:
    cluster, raw, queue = scenario
    uses = _within_capacity(cluster, raw)
    planner = plan_queue(cluster, _profile(cluster, uses), queue, depth=depth, window_ns=24 * H)
    assert planner.profile.overcommitted() is None
    for position, group in enumerate(queue):
        start = planner.starts[group.name]
        if position >= depth:
            assert start.unplanned == "depth"
            PATHS["beyond depth"] += 1
            continue
        if start.start_ns is None:
            PATHS["no start in window"] += 1
            continue
        PATHS["planned now" if start.start_ns == 0 else "planned later"] += 1
        assert 0 <= start.start_ns <= 24 * H
        # At its start every task's node has its shape free over its whole run,
        # counting everything else planned (its own uses left out).
        free = planner.profile.free_over(start.start_ns, start.end_ns, group.name)
        want: dict[int, int] = {}
        for nodes in start.nodes.values():
            for node in nodes:
                want[node] = want.get(node, 0) + group.demands[0].shape.gpu
        assert all(free[node][0] >= gpus for node, gpus in want.items())
        # It could not have started at any earlier bound (the earliest fit).
        for t in planner.profile.bounds(start.start_ns):
            if t < start.start_ns:
                earlier = planner.profile.free_over(
                    t,
                    None if group.runtime.runtime_ns is None else t + group.runtime.runtime_ns,
                    group.name,
                )
                fits = sum(f[0] // group.demands[0].shape.gpu for f in earlier)
                # later plans may have taken it since: only check when nothing planned after
                if position == len(queue) - 1:
                    assert fits < group.demands[0].need


@settings(max_examples=100, deadline=None)
@given(_scenarios())
def test_bisection_finds_what_trying_every_time_finds(
    scenario: tuple[Cluster, list[Use], list[Waiting]],
) -> None:
    cluster, raw, queue = scenario
    uses = _within_capacity(cluster, raw)
    quick = plan_queue(cluster, _profile(cluster, uses), queue)

    class Linear(ShadowPlanner):
        def _monotone(self, group: Waiting) -> bool:
            return False

    slow = Linear(cluster, _profile(cluster, uses))
    for group in queue:
        slow.plan(group)
    assert [quick.starts[g.name].start_ns for g in queue] == [
        slow.starts[g.name].start_ns for g in queue
    ]
    PATHS["bisection compared"] += 1


@pytest.fixture(scope="module", autouse=True)
def _paths() -> Iterator[None]:
    yield
    print(f"\nshadow planner paths taken: {dict(sorted(PATHS.items()))}")


@settings(max_examples=100, deadline=None)
@given(_scenarios(), st.integers(0, 12), st.one_of(st.none(), st.integers(1, 12)))
def test_the_kept_peak_is_the_largest_use_at_any_time_of_the_span(
    scenario: tuple[Cluster, list[Use], list[Waiting]], start_h: int, length_h: int | None
) -> None:
    cluster, uses, _ = scenario
    profile = _profile(cluster, uses)
    start = start_h * H
    end = None if length_h is None else start + length_h * H
    for node in range(len(cluster)):
        times = [start] + [t for t in profile.bounds() if start < t and (end is None or t < end)]
        expected = [max(profile.used_at(node, t)[d] for t in times) for d in range(3)]
        assert list(profile.peak(node, start, end)) == expected
        assert list(profile.peak(node, start, end, ignore="r0")) == [
            max(profile.used_at(node, t, "r0")[d] for t in times) for d in range(3)
        ]
