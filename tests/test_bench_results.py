"""`bench/results/`: one current file per benchmark, each judged against the one targets
table (`bench/targets.py`, ADR 0069).

The mapping: ``bench/bench_NAME.py`` writes ``bench/results/NAME.json``, and
``bench/mutation_report.py`` writes ``mutation.json``; nothing else sits beside them but
the import-graph notes (``import_graph_*.txt``). One-off records (A/B comparisons,
instruction counts, runs of some parts of a benchmark) live in ``bench/results/ab/``,
and each stays only while an ADR cites it.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "bench"
RESULTS = BENCH / "results"
# Results files written by a script that is not a ``bench_*.py`` benchmark.
OTHER_WRITERS = {"mutation": "mutation_report.py"}


@functools.cache
def _targets() -> ModuleType:
    """``bench/targets.py``, loaded by its path (``bench/`` is no package). Registered
    under its name first: its dataclasses look their module up there."""
    spec = importlib.util.spec_from_file_location("targets", BENCH / "targets.py")
    assert spec is not None and spec.loader is not None
    module = sys.modules.get("targets") or importlib.util.module_from_spec(spec)
    if "targets" not in sys.modules:
        sys.modules["targets"] = module
        spec.loader.exec_module(module)
    return module


def _current() -> dict[str, dict[str, Any]]:
    return {p.stem: json.loads(p.read_text()) for p in sorted(RESULTS.glob("*.json"))}


def test_there_is_one_current_results_file_per_benchmark_and_nothing_else():
    benchmarks = {p.stem.removeprefix("bench_") for p in BENCH.glob("bench_*.py")}
    assert set(_current()) == benchmarks | set(OTHER_WRITERS)
    assert all((BENCH / script).exists() for script in OTHER_WRITERS.values())
    others = {p.name for p in RESULTS.iterdir() if p.is_file() and p.suffix != ".json"}
    assert all(name.startswith("import_graph_") for name in others), others


def test_the_targets_table_has_an_entry_for_every_results_file():
    assert set(_targets().TARGETS) == set(_current())


@pytest.mark.parametrize("bench", sorted(_current()))
def test_each_results_file_records_measured_target_and_met_for_every_target(bench: str):
    targets = _targets()
    results = _current()[bench]
    names = [t.name for t in targets.TARGETS[bench]]
    assert names, f"{bench} has no targets: every benchmark is held to at least one"
    recorded = results["targets_met"]
    assert sorted(recorded) == sorted(names)
    for verdict in recorded.values():
        assert sorted(verdict) == ["measured", "met", "target"]
        assert isinstance(verdict["met"], bool)
    # The verdicts are the table's, read from the recorded figures (not edited by hand),
    # and the table is the only statement of the bounds.
    assert targets.targets_met(bench, results) == recorded
    assert "targets" not in results


def test_every_one_off_record_is_cited_by_an_adr():
    adrs = "\n".join(p.read_text() for p in (ROOT / "ADR").glob("*.md"))
    uncited = [p.name for p in (RESULTS / "ab").iterdir() if f"results/ab/{p.name}" not in adrs]
    assert not uncited, f"one-off records no ADR cites (drop them, or cite them): {uncited}"


def test_a_missing_figure_is_a_target_not_met():
    verdicts = _targets().targets_met("pg", {"figures": {}})
    assert verdicts and all(v == {**v, "measured": None, "met": False} for v in verdicts.values())


def _scheduling_summary(rows: dict[str, tuple[float, float, float]]) -> dict[str, Any]:
    fields = ("gang_time_to_start_p99_s", "small_time_to_start_p50_s", "wasted_gpu_hours")
    return {
        policy: {f: {"median": v, "low": v, "high": v} for f, v in zip(fields, values, strict=True)}
        for policy, values in rows.items()
    }


def test_each_workload_holds_the_recommended_policy_to_the_best_peer_and_non_dominance():
    peers = {
        "volcano": (9000.0, 5.0, 2.0),
        "volcano-sla": (4000.0, 120.0, 130.0),
        "yunikorn": (4100.0, 500.0, 260.0),
        "kueue": (9900.0, 10.0, 50.0),
        "slurm-easy": (5000.0, 6.0, 1.5),
        # not a peer: never the yardstick, however good its figures
        "independent": (1.0, 1.0, 0.0),
    }
    summary = _scheduling_summary({**peers, "recommended": (4400.0, 5.6, 60.0)})
    verdicts = _targets().targets_met("scheduling", {"workloads": {"mixed": {"summary": summary}}})
    mixed = {
        k.removeprefix("mixed_recommended_"): v
        for k, v in verdicts.items()
        if k.startswith("mixed_")
    }
    assert mixed == {
        "gang_p99_within_10pct_of_best_peer": {
            "measured": 4400.0,
            "target": "<= 4400 (1.1 x volcano-sla's 4000)",
            "met": True,
        },
        "small_p50_within_10pct_of_best_peer": {
            "measured": 5.6,
            "target": "<= 5.5 (1.1 x volcano's 5)",
            "met": False,
        },
        "wasted_within_10pct_of_best_peer": {
            "measured": 60.0,
            "target": "<= 1.65 (1.1 x slurm-easy's 1.5)",
            "met": False,
        },
        "not_dominated_by_a_peer": {"measured": 0.0, "target": "<= 0", "met": True},
    }
    # Worse than slurm-easy on every figure: dominated, by one peer.
    summary = _scheduling_summary({**peers, "recommended": (5100.0, 6.5, 1.6)})
    verdicts = _targets().targets_met("scheduling", {"workloads": {"mixed": {"summary": summary}}})
    assert verdicts["mixed_recommended_not_dominated_by_a_peer"]["measured"] == 1.0
    assert not verdicts["mixed_recommended_not_dominated_by_a_peer"]["met"]
    # Workloads not measured, and a peer not measured, are targets not met.
    assert verdicts["llm_day_recommended_gang_p99_within_10pct_of_best_peer"] == {
        "measured": None,
        "target": "<= (bound not measured)",
        "met": False,
    }
    del summary["kueue"]
    verdicts = _targets().targets_met("scheduling", {"workloads": {"mixed": {"summary": summary}}})
    assert verdicts["mixed_recommended_wasted_within_10pct_of_best_peer"]["met"] is False
    assert verdicts["mixed_recommended_not_dominated_by_a_peer"]["measured"] is None


def test_every_scheduling_workload_has_its_peer_targets():
    targets = _targets()
    names = {t.name for t in targets.TARGETS["scheduling"]}
    for workload, figures in targets.SCHEDULING_WORKLOADS.items():
        prefix = f"{workload.replace('-', '_')}_recommended"
        assert f"{prefix}_not_dominated_by_a_peer" in names
        assert {f"{prefix}_{f}_within_10pct_of_best_peer" for f in figures} <= names
    path = BENCH / "bench_scheduling.py"
    spec = importlib.util.spec_from_file_location("bench_scheduling", path)
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    assert set(targets.SCHEDULING_WORKLOADS) == {*bench.SCENARIOS, *bench.TRACES}
