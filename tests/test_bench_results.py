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
