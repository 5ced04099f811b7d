"""The mutation report (`bench/mutation_report.py`): what counts as killed, equivalent or
not killed, per module and per scope, and the equivalents list it reads."""

from __future__ import annotations

import importlib
import json
import os
import re
import sys
import tomllib
from pathlib import Path
from types import ModuleType, SimpleNamespace

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
    result = mutation_report.report(STATUSES, EQUIVALENTS, sha256=_sha)
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


def _sha(module: str) -> str:
    return f"sha of {module}"


def test_a_module_this_run_did_not_check_keeps_its_earlier_record_made_on_the_same_source(
    mutation_report,
):
    earlier = mutation_report.report(STATUSES, EQUIVALENTS, sha256=_sha)
    # Another working copy: it ran module c whole and none of a.
    here = {
        **{n: "not checked" for n in STATUSES if ".a." in n},
        "costart.domain.b.x_g__mutmut_1": "killed",
        "costart.domain.b.x_g__mutmut_2": "survived",
        "costart.domain.c.x_h__mutmut_1": "killed",
        "costart.rest.auth.x_k__mutmut_1": "not checked",
    }
    result = mutation_report.report(here, EQUIVALENTS, [earlier], sha256=_sha)
    domain = result["scopes"]["domain"]
    a = domain["modules"]["costart.domain.a"]
    assert a == {
        **earlier["scopes"]["domain"]["modules"]["costart.domain.a"],
        "from_earlier_run": True,
    }
    # b was run here, in part before: this run's record stands, not the earlier one.
    assert domain["modules"]["costart.domain.b"]["checked"] == 2
    assert "from_earlier_run" not in domain["modules"]["costart.domain.b"]
    assert domain["modules_from_earlier_runs"] == ["costart.domain.a"]
    assert result["scopes"]["rest_auth"]["modules_from_earlier_runs"] == ["costart.rest.auth"]
    # Totals are summed from the module records, carried ones included.
    assert (domain["mutants"], domain["checked"], domain["killed"], domain["timeout"]) == (
        9,
        9,
        3,
        1,
    )
    assert (domain["equivalent"], domain["survived_not_equivalent"], domain["no_tests"]) == (
        2,
        2,
        1,
    )
    assert domain["kill_rate"] == round(4 / 7, 4)
    assert domain["modules_not_run"] == []
    assert domain["survivors"] == {
        **earlier["scopes"]["domain"]["survivors"],
        "costart.domain.b.x_g__mutmut_2": "NOT KILLED",
    }


def test_a_record_made_on_other_source_or_without_a_hash_is_not_carried(mutation_report):
    earlier = mutation_report.report(STATUSES, EQUIVALENTS, sha256=_sha)
    unchecked = dict.fromkeys(STATUSES, "not checked")
    changed = mutation_report.report(
        unchecked, EQUIVALENTS, [earlier], sha256=lambda m: "new " + _sha(m)
    )
    no_hash = json.loads(json.dumps(earlier))
    for record in no_hash["scopes"]["domain"]["modules"].values():
        del record["source_sha256"]
    unhashed = mutation_report.report(unchecked, EQUIVALENTS, [no_hash], sha256=_sha)
    # A record that checked nothing is not carried either: it says nothing.
    never_run = mutation_report.report(
        unchecked,
        EQUIVALENTS,
        [mutation_report.report(unchecked, EQUIVALENTS, sha256=_sha)],
        sha256=_sha,
    )
    for result in (changed, unhashed, never_run):
        domain = result["scopes"]["domain"]
        assert domain["modules_from_earlier_runs"] == []
        assert domain["modules_not_run"] == [
            "costart.domain.a",
            "costart.domain.b",
            "costart.domain.c",
        ]
        assert (domain["checked"], domain["kill_rate"], domain["survivors"]) == (0, None, {})
    assert changed["scopes"]["rest_auth"]["modules_not_run"] == ["costart.rest.auth"]


def test_reports_of_two_working_copies_compose_each_module_from_the_one_that_checked_it(
    mutation_report,
):
    # Each copy ran one module; a third copy that ran nothing gets both, and where both
    # reports hold a module the record that checked more wins.
    mine = {n: (s if ".domain.a." in n else "not checked") for n, s in STATUSES.items()}
    theirs = {n: (s if ".domain.b." in n else "not checked") for n, s in STATUSES.items()}
    first = mutation_report.report(mine, EQUIVALENTS, sha256=_sha)
    second = mutation_report.report(theirs, EQUIVALENTS, sha256=_sha)
    for order in ([first, second], [second, first]):
        both = mutation_report.report(
            dict.fromkeys(STATUSES, "not checked"), EQUIVALENTS, order, sha256=_sha
        )
        domain = both["scopes"]["domain"]
        assert domain["modules_from_earlier_runs"] == ["costart.domain.a", "costart.domain.b"]
        assert domain["modules"]["costart.domain.a"]["checked"] == 6
        assert domain["modules"]["costart.domain.b"]["checked"] == 1
        assert domain["modules_not_run"] == ["costart.domain.c"]


def test_a_carried_record_is_judged_against_todays_equivalents_list(mutation_report):
    earlier = mutation_report.report(STATUSES, EQUIVALENTS, sha256=_sha)
    longer = {**EQUIVALENTS, "costart.domain.a.x_f__mutmut_5": "found equivalent since"}
    result = mutation_report.report(
        dict.fromkeys(STATUSES, "not checked"), longer, [earlier], sha256=_sha
    )
    a = result["scopes"]["domain"]["modules"]["costart.domain.a"]
    assert (a["equivalent"], a["survived_not_equivalent"], a["kill_rate"]) == (
        3,
        0,
        round(2 / 3, 4),
    )
    assert result["scopes"]["domain"]["survivors"]["costart.domain.a.x_f__mutmut_5"] == (
        "found equivalent since"
    )


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


def test_results_of_a_module_whose_source_changed_since_its_mutants_were_made_are_not_checked(
    mutation_report, monkeypatch, tmp_path
):
    for module in ("a", "b"):
        source = tmp_path / "costart" / "domain" / f"{module}.py"
        made = tmp_path / "mutants" / "costart" / "domain" / f"{module}.py"
        for path in (source, made):
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("x = 1\n")
    # a's mutants were made after its source was written; b's source changed after.
    os.utime(tmp_path / "costart/domain/a.py", ns=(1_000, 1_000))
    os.utime(tmp_path / "mutants/costart/domain/a.py", ns=(2_000, 2_000))
    os.utime(tmp_path / "mutants/costart/domain/b.py", ns=(1_000, 1_000))
    os.utime(tmp_path / "costart/domain/b.py", ns=(2_000, 2_000))
    out = "".join(f"    {n}: {s}\n" for n, s in STATUSES.items() if ".domain.a." in n or ".b." in n)
    monkeypatch.setattr(mutation_report, "ROOT", tmp_path)
    monkeypatch.setattr(
        mutation_report.subprocess, "run", lambda *a, **k: SimpleNamespace(stdout=out)
    )
    statuses = mutation_report.mutmut_results()
    assert {n: s for n, s in statuses.items() if ".a." in n} == {
        n: s for n, s in STATUSES.items() if ".domain.a." in n
    }
    assert {n: s for n, s in statuses.items() if ".b." in n} == {
        "costart.domain.b.x_g__mutmut_1": "not checked",
        "costart.domain.b.x_g__mutmut_2": "not checked",
    }
