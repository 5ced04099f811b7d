"""The expected start and its interval (issue 36, ADR 0138): the shadow plan over
learned runs, at the median for the point and at the 10th and 90th percentile for the
interval; the running members of one workload ranked as the order statistics of their
ends; runs without limit or samples by how long they have run; and the limits-only
model (``squeue --start``'s). Every number below is worked out by hand from the samples
the World learned from real runs of the rig."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from costart.domain.decisions import PlaceGroup
from costart.domain.events import Assignment
from costart.placement.shadow import estimate_starts
from costart.placement.shadow.estimate import interval
from costart.placement.shadow.learned import on_grid
from costart.placement.shadow.order_stats import rank_quantile, sample_quantile
from tests.builders import SECOND_NS

from .builders import Rig, a_cluster, a_group

MINUTE_NS = 60 * SECOND_NS
NODE = "b0-r0-n0"


def _running(rig: Rig, name: str, node: str, limit: str | None = None) -> int:
    """A group of 8 one-GPU tasks running on ``node`` (owner alice, member w); returns
    when it started."""
    rig.submit(a_group(name).with_member("w", gpu=1, tasks=8, max_runtime=limit).build())
    placement = {"w": tuple(Assignment(i, node) for i in range(8))}
    rig.controller.apply_decisions([PlaceGroup(name, placement)])
    rig.start_all(name)
    started = rig.controller.members(name)[0].started_at_ns
    assert started is not None
    return started


def _learn(rig: Rig, workload: str, minutes: list[int]) -> None:
    """Runs of ``workload`` that succeed after ``minutes`` each, one after the other on
    the first node: the World learns their lengths (key: alice, workload, w)."""
    for i, length in enumerate(minutes):
        name = f"{workload}-{i}"
        _running(rig, name, NODE)
        rig.clock.advance(length * 60)
        rig.finish(name)
        assert rig.status(name) == "SUCCEEDED"


def _wait_for_a_node(rig: Rig, name: str = "next") -> None:
    rig.submit(a_group(name, owner="bob").atomic().with_member("w", gpu=8, tasks=1).build())


def test_one_running_run_gives_the_median_and_the_10th_and_90th_sample():
    rig = Rig(a_cluster(blocks=1, racks=1, nodes=1))
    _learn(rig, "train", [10, 20, 30, 40, 50])
    began = _running(rig, "train-9", NODE)
    _wait_for_a_node(rig)
    estimate = estimate_starts(rig.cluster, rig.controller.world, rig.clock.now_ns)["next"]
    # One run of five samples: the median is the 3rd (30m), the 10th percentile the 1st
    # (10m), the 90th the 5th (50m, on the grid of 4 minutes beyond 40: 52m), counted
    # from its start.
    assert estimate.start_ns == began + 30 * MINUTE_NS
    assert estimate.earliest_ns == began + 10 * MINUTE_NS
    assert estimate.latest_ns == began + 52 * MINUTE_NS
    assert estimate.basis == "estimate"


def test_a_run_that_has_run_a_while_is_answered_from_the_longer_samples():
    rig = Rig(a_cluster(blocks=1, racks=1, nodes=1))
    _learn(rig, "train", [10, 20, 30, 40, 50])
    began = _running(rig, "train-9", NODE)
    _wait_for_a_node(rig)
    now = began + 25 * MINUTE_NS
    estimate = estimate_starts(rig.cluster, rig.controller.world, now)["next"]
    # Past 25m only 30, 40, 50 remain: median the 2nd (40m), 10th the 1st, 90th the 3rd
    # (25m to go: on the grid of 2 minutes beyond 20, 26m: 51m).
    assert (estimate.start_ns, estimate.earliest_ns, estimate.latest_ns) == (
        began + 40 * MINUTE_NS,
        began + 30 * MINUTE_NS,
        began + 51 * MINUTE_NS,
    )


def test_the_first_of_three_like_runs_to_end_is_expected_earlier_than_their_median():
    rig = Rig(a_cluster(blocks=1, racks=1, nodes=3))
    _learn(rig, "train", [10, 20, 30, 40, 50])
    began = [_running(rig, f"train-{7 + i}", f"b0-r0-n{i}") for i in range(3)]
    _wait_for_a_node(rig)
    estimate = estimate_starts(rig.cluster, rig.controller.world, rig.clock.now_ns)["next"]
    # The first of 3 ends is Beta(1, 3): median 1 - 0.5^(1/3) = 0.206 -> the 2nd of 5
    # samples (20m); 10th percentile 1 - 0.9^(1/3) = 0.035 -> the 1st (10m); 90th
    # 1 - 0.1^(1/3) = 0.536 -> the 3rd (30m). The next start is the first end.
    assert began[0] == began[1] == began[2]
    assert (estimate.start_ns, estimate.earliest_ns, estimate.latest_ns) == (
        began[0] + 20 * MINUTE_NS,
        began[0] + 10 * MINUTE_NS,
        began[0] + 30 * MINUTE_NS,
    )


def test_the_limits_model_plans_over_declared_limits_only_as_squeue_start_does():
    rig = Rig(a_cluster(blocks=1, racks=1, nodes=1))
    _learn(rig, "train", [10, 20, 30, 40, 50])
    began = _running(rig, "train-9", NODE, limit="4h")
    _wait_for_a_node(rig)
    world, now = rig.controller.world, rig.clock.now_ns
    slurm = estimate_starts(rig.cluster, world, now, runtimes="limits")["next"]
    assert (slurm.start_ns, slurm.earliest_ns, slurm.latest_ns, slurm.basis) == (
        began + 240 * MINUTE_NS,
        began + 240 * MINUTE_NS,
        began + 240 * MINUTE_NS,
        "limit",
    )
    # Ours: the learned runs, under the limit.
    assert estimate_starts(rig.cluster, world, now)["next"].start_ns == began + 30 * MINUTE_NS


def test_learned_runs_above_the_limit_are_capped_at_it():
    rig = Rig(a_cluster(blocks=1, racks=1, nodes=1))
    _learn(rig, "train", [10, 20, 30, 40, 50])
    began = _running(rig, "train-9", NODE, limit="35m")
    _wait_for_a_node(rig)
    estimate = estimate_starts(rig.cluster, rig.controller.world, rig.clock.now_ns)["next"]
    assert (estimate.start_ns, estimate.earliest_ns, estimate.latest_ns) == (
        began + 30 * MINUTE_NS,
        began + 10 * MINUTE_NS,
        began + 35 * MINUTE_NS,
    )


def test_a_run_of_another_workload_of_the_same_owner_and_member_uses_their_samples():
    rig = Rig(a_cluster(blocks=1, racks=1, nodes=1))
    _learn(rig, "train", [10, 20, 30, 40, 50])
    began = _running(rig, "eval-1", NODE)  # alice's w, a workload never seen
    _wait_for_a_node(rig)
    estimate = estimate_starts(rig.cluster, rig.controller.world, rig.clock.now_ns)["next"]
    assert estimate.start_ns == began + 30 * MINUTE_NS


def test_a_run_with_neither_limit_nor_samples_runs_on_as_long_as_it_has_run():
    rig = Rig(a_cluster(blocks=1, racks=1, nodes=1))
    began = _running(rig, "train-9", NODE)
    _wait_for_a_node(rig)
    world = rig.controller.world
    now = began + 60 * MINUTE_NS
    estimate = estimate_starts(rig.cluster, world, now)["next"]
    # P(run > t | run > 1h) = 1h / t: median 2h, 10th 1h/0.9 = 66.7m (6.7m to go, on
    # the minute grid: 67m), 90th 1h/0.1 = 10h (540m to go, on the grid of 32 minutes
    # beyond 320: 544m, so 604m).
    assert estimate.start_ns == began + 120 * MINUTE_NS
    assert estimate.earliest_ns == began + 67 * MINUTE_NS
    assert estimate.latest_ns == began + 604 * MINUTE_NS
    # Slurm's model: a run without a limit never ends within the plan.
    slurm = estimate_starts(rig.cluster, world, now, runtimes="limits")["next"]
    assert slurm.start_ns is None and slurm.unplanned == "window"


def test_the_interval_holds_the_point_and_is_open_above_without_one():
    assert interval(10, 12, 8) == (10, 10)  # plans that cross are widened to the point
    assert interval(10, 5, 20) == (5, 20)
    assert interval(10, None, None) == (10, None)
    assert interval(None, 5, 20) == (5, None)


def test_the_grid_is_a_twentieth_of_the_time_left_and_a_minute_at_the_finest():
    assert [on_grid(m * MINUTE_NS) // MINUTE_NS for m in (0, 1, 20, 21, 40, 41, 80, 81)] == [
        0,
        1,
        20,
        22,
        40,
        44,
        80,
        88,
    ]
    assert on_grid(1) == MINUTE_NS and on_grid(-5) == 0


def test_rank_quantiles_match_the_closed_forms_of_the_first_and_last_of_n():
    for n in (1, 2, 5, 40):
        for level in (0.1, 0.5, 0.9):
            assert rank_quantile(1, n, level) == pytest.approx(1 - (1 - level) ** (1 / n))
            assert rank_quantile(n, n, level) == pytest.approx(level ** (1 / n))
    # Beyond the exact range: the normal approximation, still ordered by rank.
    big = [rank_quantile(i, 100, 0.5) for i in range(1, 101)]
    assert big == sorted(big) and 0 < big[0] < big[-1] < 1
    assert sample_quantile([5, 1, 3], 0.5) == 3 and sample_quantile([5, 1, 3], 1.0) == 5
    with pytest.raises(ValueError, match="rank 0 of 3"):
        rank_quantile(0, 3, 0.5)


_PATHS = {"closed": 0, "open above": 0, "no point": 0}


@settings(max_examples=40, deadline=None)
@given(
    runs=st.lists(st.integers(1, 120), min_size=0, max_size=8),
    workloads=st.lists(st.sampled_from(["train", "eval", "other"]), min_size=4, max_size=4),
    limits=st.lists(st.sampled_from([None, "30m", "2h"]), min_size=4, max_size=4),
    waiting=st.lists(st.integers(1, 16), min_size=1, max_size=4),
    later_min=st.integers(0, 300),
)
def test_earliest_is_at_most_the_point_and_the_point_at_most_latest(
    runs: list[int],
    workloads: list[str],
    limits: list[str | None],
    waiting: list[int],
    later_min: int,
) -> None:
    rig = Rig(a_cluster(blocks=1, racks=1, nodes=4))
    _learn(rig, "train", runs)
    for i in range(3):
        _running(rig, f"{workloads[i]}-{90 + i}", f"b0-r0-n{i}", limit=limits[i])
    for i, gpus in enumerate(waiting):
        rig.submit(
            a_group(f"w{i}", owner="bob")
            .atomic()
            .with_member("w", gpu=8, tasks=math.ceil(gpus / 8) if gpus > 8 else 1)
            .build()
        )
    now = rig.clock.now_ns + later_min * MINUTE_NS
    for e in estimate_starts(rig.cluster, rig.controller.world, now).values():
        if e.start_ns is None:
            _PATHS["no point"] += 1
            assert e.latest_ns is None
            continue
        assert e.earliest_ns is not None and e.earliest_ns <= e.start_ns
        assert e.start_ns >= now
        if e.latest_ns is None:
            _PATHS["open above"] += 1
        else:
            _PATHS["closed"] += 1
            assert e.start_ns <= e.latest_ns


def test_zz_the_property_test_took_every_path():
    print(f"interval paths taken: {_PATHS}")
    assert all(_PATHS.values()), _PATHS


def test_a_group_backing_off_starts_no_earlier_than_its_retry():
    rig = Rig(a_cluster(blocks=1, racks=1, nodes=1))
    _learn(rig, "train", [10, 20, 30, 40, 50])
    began = _running(rig, "train-9", NODE)
    _wait_for_a_node(rig)
    world = rig.controller.world
    # As a release with backoff leaves it (hand-set: the plan reads only the field).
    world.group_named("next").retry_at_ns = began + 40 * MINUTE_NS
    estimate = estimate_starts(rig.cluster, world, rig.clock.now_ns)["next"]
    assert (estimate.start_ns, estimate.earliest_ns, estimate.latest_ns) == (
        began + 40 * MINUTE_NS,
        began + 40 * MINUTE_NS,
        began + 52 * MINUTE_NS,
    )
