"""The starvation scenario and the scheduling-quality benchmark, at a small seed count
(`make bench` runs 20 seeds): reservations start the gangs that atomic placement
starves, and the benchmark's report holds every policy's figures."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

from costart.cli.sim_cmd import controller_factory
from costart.sim.quality import SUMMARISED, RunFigures, measure, spread, summarise
from costart.sim.results import ALL_POLICIES
from tests.sim.helpers import ROOT, setup_of


def test_under_atomic_the_stream_of_small_jobs_starves_the_gangs_and_reserve_starts_them():
    runs = measure(
        lambda seed: setup_of("starvation", seed),
        [1],
        ["atomic", "as-specified"],
        controller_factory,
    )
    # as specified: the gangs reserve, the small jobs are atomic
    atomic, reserve = runs["atomic"][0], runs["as-specified"][0]
    assert atomic.gangs == reserve.gangs == 3 and atomic.small_jobs == 700
    # atomic: the gangs wait for the stream to dry up; reserve: for one reservation
    assert atomic.gang_time_to_start_p50_s > 2 * reserve.gang_time_to_start_p50_s
    assert atomic.gang_time_to_start_p99_s > 2 * reserve.gang_time_to_start_p99_s
    # the price: small jobs queue behind the claims, and held GPUs sit idle
    assert reserve.small_time_to_start_p50_s > atomic.small_time_to_start_p50_s
    assert reserve.idle_held_gpu_hours > 10 * atomic.idle_held_gpu_hours


def test_a_group_that_never_started_counts_with_its_wait_until_the_end():
    runs = measure(
        lambda seed: setup_of("deadlock-trap", seed), [1], ["independent"], controller_factory
    )
    (run,) = runs["independent"]
    assert run.gang_never_started == 3
    # they arrived in the first seconds and the stuck run is carried to its 24h horizon
    assert 24 * 3600 - 10 <= run.gang_time_to_start_p50_s <= 24 * 3600


def test_spread_is_the_median_and_range_of_the_known_values():
    assert spread([3, None, 1, 2]).median == 2
    assert (spread([3, None, 1, 2]).low, spread([3, 1, 2]).high) == (1, 3)
    assert spread([None]).median is None
    figures = [
        RunFigures(s, 1, 1, 0, 0, s, s, 1.0, None, 0.0, 0.0, 0.5, "quiescent")
        for s in (1, 2, 3, 10)
    ]
    summary = summarise(figures)
    assert summary["gang_time_to_start_p99_s"].median == 2.5
    assert summary["small_time_to_start_p99_s"].median is None


def _bench():
    path = ROOT / "bench" / "bench_scheduling.py"
    spec = importlib.util.spec_from_file_location("bench_scheduling", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_benchmark_reports_every_policy_with_its_spread(tmp_path: Path):
    out = tmp_path / "scheduling.json"
    _bench().main(["--seeds", "2", "--workloads", "deadlock-trap", "--out", str(out)])
    report = json.loads(out.read_bytes())
    entry = report["workloads"]["deadlock-trap"]
    assert sorted(entry["summary"]) == sorted([*ALL_POLICIES, "as-specified", "recommended"])
    assert [r["seed"] for r in entry["runs"]["atomic"]] == [1, 2]
    independent = entry["summary"]["independent"]
    assert independent["gang_never_started"]["median"] == 3
    assert entry["summary"]["reserve"]["gang_never_started"]["high"] == 0


def test_the_starvation_targets_say_what_is_not_measured():
    targets = _bench().starvation_targets({})
    assert str(targets["status"]).startswith("not measured")


def test_the_table_per_workload_marks_censored_waits_and_missing_figures(capsys):
    bench = _bench()
    figures = {name: spread([1.0]) for name in SUMMARISED}
    figures["gang_never_started"] = spread([0, 2])  # one seed left a gang unstarted
    figures["small_never_started"] = spread([0])
    figures["small_time_to_start_p50_s"] = spread([None])  # no small jobs
    bench.print_table({"recommended": figures})
    header, row = capsys.readouterr().out.splitlines()
    assert header.split("|")[0].strip() == "policy" and "useful util" in header
    cells = [c.strip() for c in row.split("|")]
    assert cells[0] == "recommended"
    assert cells[1:5] == ["≥1", "≥1", "-", "1"]  # gang waits censored, small p50 missing
    assert cells[-1] == "1/0"
