"""The runtime history (ADR 0111): which run endings are samples, the bounds on samples
and keys with their deterministic eviction, the workload a group is a run of, and the
nearest-rank estimate and slip with exact values."""

from __future__ import annotations

import msgspec
import pytest

from costart.controller import Controller
from costart.domain import runtime_history as rh
from costart.domain.decisions import PlaceMember
from costart.domain.events import Assignment
from costart.domain.runtime_history import (
    RuntimeHistory,
    nearest_rank,
    runtime_key,
    slipped_runtime,
    workload_of,
)
from costart.domain.spec_types import GroupSpec
from tests.builders import (
    USER,
    ManualClock,
    a_group,
    fail,
    full_placement,
    new_controller,
    start,
    succeed,
)

HOUR = 3600 * 10**9


def _spec(name: str = "train-7", owner: str = "alice") -> GroupSpec:
    return a_group(name, owner).with_member("trainer", tasks=2).build()


def _running(clock: ManualClock, spec: GroupSpec, c: Controller | None = None) -> Controller:
    c = c or new_controller(clock)
    c.submit(spec)
    c.apply_decisions([full_placement(spec)])
    start(c, f"{spec.name}/trainer")
    return c


def test_a_run_that_succeeded_is_a_sample_of_its_length_under_owner_workload_and_member():
    clock = ManualClock(5 * HOUR)
    c = _running(clock, _spec())
    clock.advance(3 * 3600)
    succeed(c, "train-7/trainer")
    assert c.world.runtime_history.keys == {
        "alice train trainer": rh.RuntimeSamples(used=1, samples=[3 * HOUR])
    }


@pytest.mark.parametrize(
    "ending", ["preempted", "node-lost", "error", "oom", "max-runtime", "cancel"]
)
def test_a_run_stopped_or_failed_says_nothing_about_its_length(ending: str):
    clock = ManualClock()
    c = _running(clock, _spec())
    clock.advance(3600)
    if ending == "cancel":
        c.cancel("train-7", actor=USER)
    else:
        fail(c, "train-7/trainer", ending, exit_code=1)  # type: ignore[arg-type]
    assert c.world.member_named(c.group("train-7"), "trainer").is_terminal
    assert c.world.runtime_history == RuntimeHistory()


def test_a_run_restarted_counts_from_its_own_start_not_the_first():
    clock = ManualClock()
    spec = (
        a_group("etl-1")
        .with_member("trainer")
        .with_rule("restart-member", reasons=("error",), max_restarts=2)
        .build()
    )
    c = _running(clock, spec)
    clock.advance(600)
    fail(c, "etl-1/trainer", "error", exit_code=1)
    c.apply_decisions([PlaceMember("etl-1", "trainer", (Assignment(0, "n2"),))])
    start(c, "etl-1/trainer")
    clock.advance(1800)
    succeed(c, "etl-1/trainer")
    assert c.world.runtime_history.samples("alice etl trainer") == [1800 * 10**9]


def test_a_key_keeps_its_newest_samples_only(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(rh, "SAMPLES_PER_KEY", 3)
    history = RuntimeHistory()
    for runtime in (5, 1, 4, 2):
        history.learn("k", runtime)
    assert history.samples("k") == [1, 4, 2]
    assert history.learned == 4


def test_a_new_key_beyond_the_bound_evicts_the_one_that_learned_least_recently(
    monkeypatch: pytest.MonkeyPatch,
):
    monkeypatch.setattr(rh, "MAX_KEYS", 3)
    history = RuntimeHistory()
    for key in ("z", "a", "m"):
        history.learn(key, 1)
    history.learn("z", 2)  # z learned last now: a is the least recent
    history.learn("d", 1)
    assert list(history.keys) == ["m", "z", "d"]
    # A history decoded (keys sorted by text: d, m, z) evicts the same key as the live one.
    encoded = msgspec.msgpack.Encoder(order="deterministic").encode(history)
    decoded = msgspec.msgpack.decode(encoded, type=RuntimeHistory)
    assert list(decoded.keys) == ["m", "z", "d"]
    for copy in (history, decoded):
        copy.learn("q", 9)
    assert list(history.keys) == list(decoded.keys) == ["z", "d", "q"]
    assert history == decoded


def test_a_negative_length_is_not_a_run_and_learns_nothing():
    history = RuntimeHistory()
    history.learn("k", -1)
    assert history == RuntimeHistory()


@pytest.mark.parametrize(
    ("name", "labels", "workload"),
    [
        ("train-0042", {}, "train"),
        ("train-7-2", {}, "train"),
        ("llama-finetune-12", {}, "llama-finetune"),
        ("eval", {}, "eval"),
        ("v2", {}, "v2"),
        ("123", {}, "123"),
        ("train-7", {"costart.io/workload": "pretrain/llama"}, "pretrain/llama"),
        ("train-7", {"team": "x"}, "train"),
    ],
)
def test_the_workload_is_the_label_else_the_name_without_its_instance_number(
    name: str, labels: dict[str, str], workload: str
):
    doc = a_group(name).with_member("m")
    doc.doc["labels"] = labels
    assert workload_of(doc.build()) == workload


def test_the_key_is_owner_workload_and_member():
    spec = _spec("train-9", "bob@lab")
    assert runtime_key(spec, spec.members[0]) == "bob@lab train trainer"


def test_nearest_rank_percentiles_with_exact_values():
    samples = [50, 10, 40, 20, 30]
    assert nearest_rank(samples, 80) == 40  # rank ceil(0.8*5) = 4
    assert nearest_rank(samples, 81) == 50  # rank ceil(4.05) = 5
    assert nearest_rank(samples, 100) == 50
    assert nearest_rank(samples, 1) == 10
    assert nearest_rank([7], 80) == 7
    assert nearest_rank([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 80) == 8


def test_an_estimate_needs_min_samples_and_is_the_80th_percentile():
    history = RuntimeHistory()
    history.learn("k", 3 * HOUR)
    history.learn("k", 1 * HOUR)
    assert history.estimate("k") is None
    assert history.estimate("other") is None
    history.learn("k", 2 * HOUR)
    assert history.estimate("k") == 3 * HOUR  # rank ceil(0.8*3) = 3
    history.learn("k", 1 * HOUR)
    history.learn("k", 1 * HOUR)
    assert history.estimate("k") == 2 * HOUR  # [1,1,1,2,3]: rank 4


def test_a_slipped_run_goes_to_the_next_longer_sample_then_doubles():
    samples = [HOUR, 3 * HOUR, 2 * HOUR]
    assert slipped_runtime(samples, 90 * 60 * 10**9) == 2 * HOUR
    assert slipped_runtime(samples, 2 * HOUR) == 3 * HOUR  # strictly longer
    assert slipped_runtime(samples, 3 * HOUR) == 6 * HOUR
    assert slipped_runtime(samples, 4 * HOUR) == 8 * HOUR
    assert slipped_runtime([0, 0, 0], 0) == 1  # always ahead, even from nothing
