"""The expected-start benchmark's figures (`bench/bench_estimates.py`, ADR 0138) on a
tiny case worked out by hand: the error, which groups count, the coverage, and the
limit a user is taken to declare."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from costart.placement.shadow import StartEstimate

ROOT = Path(__file__).resolve().parents[1]
MIN = 60 * 10**9


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "bench_estimates", ROOT / "bench" / "bench_estimates.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("bench_estimates", module)
    spec.loader.exec_module(module)
    return module


bench = _bench()


def _outcome(
    started_min: float | None,
    point: float | None,
    low: float,
    high: float,
    slurm: float | None,
    naive: float | None,
) -> object:
    def ns(minutes: float | None) -> int | None:
        return None if minutes is None else round(minutes * MIN)

    estimate = StartEstimate("g", ns(point), ns(low), ns(high), "estimate")
    asked = bench.Asked(10 * 10**9, estimate, ns(slurm), ns(naive))
    return bench.Outcome(0, ns(started_min), asked)


def test_the_error_is_relative_to_the_wait_with_a_five_minute_floor():
    long_wait = _outcome(20, 25, 15, 30, 60, None)
    assert bench.error(25 * MIN, long_wait) == pytest.approx(5 / 20)
    assert bench.error(60 * MIN, long_wait) == pytest.approx(40 / 20)
    # No answer: the plan's window end (a day) after the question (10 s after arrival).
    assert bench.error(None, long_wait) == pytest.approx(
        (1440 * MIN + 10 * 10**9 - 20 * MIN) / (20 * MIN)
    )
    short_wait = _outcome(2, 4, 3, 5, 2, 7)
    assert bench.error(4 * MIN, short_wait) == pytest.approx(2 / 5)


def test_the_figures_count_groups_that_waited_a_minute_and_started():
    outcomes = [
        _outcome(20, 25, 15, 30, 60, None),  # ours 0.25, slurm 2.0, naive 71.008
        _outcome(2, 4, 3, 5, 2, 7),  # ours 0.4, slurm 0.0, naive 1.0; not covered
        _outcome(0.5, 0.5, 0.5, 0.5, 0.5, 0.5),  # waited under a minute: left out
        _outcome(None, 30, 20, 40, 30, 30),  # never started: counted apart
    ]
    figures = bench.figures_of(outcomes)
    assert (figures["asked"], figures["waited"], figures["never_started"], figures["scored"]) == (
        4,
        3,
        1,
        2,
    )
    ours = figures["ours"]
    assert (ours["median_error"], ours["p90_error"], ours["within_25pct"]) == (0.25, 0.4, 0.5)
    assert (ours["coverage"], ours["closed_intervals"], ours["answered"]) == (0.5, 1.0, 1.0)
    assert figures["slurm"]["median_error"] == 0.0 and figures["slurm"]["p90_error"] == 2.0
    assert figures["naive"]["median_error"] == 1.0
    assert figures["naive"]["p90_error"] == pytest.approx(71.0083, abs=1e-4)
    assert figures["naive"]["answered"] == 0.5


def test_a_user_declares_the_run_plus_ten_minutes_rounded_up():
    assert bench.declared_limit(20 * MIN) == 30 * MIN
    assert bench.declared_limit(50 * MIN) == 60 * MIN
    assert bench.declared_limit(51 * MIN) == 120 * MIN
    assert bench.declared_limit(20 * 1440 * MIN) == 20 * 1440 * MIN + 10 * MIN
