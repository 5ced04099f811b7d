"""The mutation report (`bench/mutation_report.py`): what counts as killed, equivalent or
not killed, per module and per scope, and the equivalents list it reads."""

from __future__ import annotations

import importlib
import re
import sys
import tomllib
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"


@pytest.fixture(scope="module")
def mutation_report() -> ModuleType:
    sys.path.insert(0, str(BENCH))
    try:
        return importlib.import_module("mutation_report")
    finally:
        sys.path.remove(str(BENCH))


STATUSES = {
    "costart.domain.a.x_f__mutmut_1": "killed",
    "costart.domain.a.x_f__mutmut_2": "timeout",
    "costart.domain.a.x_f__mutmut_3": "survived",  # listed
    "costart.domain.a.x_f__mutmut_4": "no tests",  # listed: unreachable
    "costart.domain.a.x_f__mutmut_5": "survived",  # not listed
    "costart.domain.a.x_f__mutmut_6": "no tests",  # not listed
    "costart.domain.b.x_g__mutmut_1": "killed",
    "costart.domain.b.x_g__mutmut_2": "not checked",
    "costart.domain.c.x_h__mutmut_1": "not checked",
    "costart.rest.auth.x_k__mutmut_1": "killed",
}
EQUIVALENTS = {
    "costart.domain.a.x_f__mutmut_3": "same output",
    "costart.domain.a.x_f__mutmut_4": "unreachable",
    "costart.domain.b.x_g__mutmut_1": "listed but killed: stale",
}


def test_the_kill_rate_counts_listed_equivalents_out_and_every_other_undetected_in(
    mutation_report,
):
    result = mutation_report.report(STATUSES, EQUIVALENTS)
    a = result["scopes"]["domain"]["modules"]["costart.domain.a"]
    assert {k: a[k] for k in ("mutants", "checked", "killed", "timeout", "equivalent")} == {
        "mutants": 6,
        "checked": 6,
        "killed": 1,
        "timeout": 1,
        "equivalent": 2,
    }
    assert (a["survived_not_equivalent"], a["no_tests"], a["kill_rate"]) == (1, 1, 0.5)
    domain = result["scopes"]["domain"]
    assert (domain["checked"], domain["mutants"], domain["kill_rate"]) == (7, 9, 0.6)
    assert domain["modules_checked_whole"] == ["costart.domain.a"]
    assert domain["modules_checked_in_part"] == ["costart.domain.b"]
    assert domain["modules_not_run"] == ["costart.domain.c"]
    assert domain["survivors"] == {
        "costart.domain.a.x_f__mutmut_3": "same output",
        "costart.domain.a.x_f__mutmut_4": "unreachable",
        "costart.domain.a.x_f__mutmut_5": "NOT KILLED",
        "costart.domain.a.x_f__mutmut_6": "NO TEST REACHES IT",
    }
    assert result["scopes"]["rest_auth"]["kill_rate"] == 1.0
    assert result["scopes"]["store_integrity"]["kill_rate"] is None
    assert result["equivalents_not_surviving"] == ["costart.domain.b.x_g__mutmut_1"]


def test_pending_lists_the_unchecked_and_the_undetected_not_listed(mutation_report, monkeypatch):
    monkeypatch.setattr(mutation_report, "mutmut_results", lambda: STATUSES)
    monkeypatch.setattr(mutation_report.tomllib, "loads", lambda _text: {"equivalent": EQUIVALENTS})
    assert mutation_report.pending(["costart.domain.a.*", "costart.domain.b.*"]) == [
        "costart.domain.a.x_f__mutmut_5",
        "costart.domain.a.x_f__mutmut_6",
        "costart.domain.b.x_g__mutmut_2",
    ]


def test_every_listed_equivalent_names_a_mutant_and_gives_a_one_line_reason():
    listed = tomllib.loads((BENCH / "mutation_equivalents.toml").read_text())["equivalent"]
    mutant = re.compile(r"costart(\.[a-z_]+)+\.x(ǁ[A-Za-z_]+ǁ)?_?[A-Za-z_]*__mutmut_[0-9]+")
    for name, why in listed.items():
        assert mutant.fullmatch(name), name
        assert why.strip() and "\n" not in why, name
