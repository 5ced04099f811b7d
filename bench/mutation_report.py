"""The mutation-testing report: ``bench/results/mutation.json`` from the last `make mutate`
run (mutmut's own results), with every surviving mutant either listed as equivalent with
its reason (``bench/mutation_equivalents.toml``) or counted against the kill rate.

Kill rate = (killed + timed out) / (checked - equivalent): a mutant whose tests ran past
their time limit did not pass them; one no test reaches ("no tests") counts against it,
unless it is listed as equivalent (code no input reaches, e.g. a handler behind a check
that always raises first).
Target: >= 95% in the domain. A bounded run leaves some mutants "not checked": the
per-module counts say which.

Run: python bench/mutation_report.py   (after `make mutate`)
     python bench/mutation_report.py --pending 'costart.domain.policy.*'   (the mutants
     of a module still to run: unchecked, or undetected and not listed as equivalent)
"""

from __future__ import annotations

import subprocess
import sys
import tomllib
from collections import Counter
from fnmatch import fnmatch
from pathlib import Path

from common import write_results

ROOT = Path(__file__).resolve().parents[1]
EQUIVALENTS = Path(__file__).resolve().parent / "mutation_equivalents.toml"
SCOPES = {
    "domain": "costart.domain.",
    "store_integrity": "costart.store.",
    "rest_auth": "costart.rest.auth.",
}
DETECTED = ("killed", "timeout")
UNCHECKED = ("not checked", "skipped")
# A mutant the tests did not tell apart: it passed them, or no test reached it.
UNDETECTED = ("survived", "no tests")


def mutmut_results() -> dict[str, str]:
    """Mutant name -> mutmut's status, for every mutant of the last run."""
    out = subprocess.run(
        [sys.executable, "-m", "mutmut", "results", "--all", "true"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    statuses = {}
    for line in out.splitlines():
        name, sep, status = line.strip().rpartition(": ")
        if sep and name.startswith("costart."):
            statuses[name] = status
    if not statuses:
        raise SystemExit("no mutmut results: run `make mutate` first")
    return statuses


def _figures(mine: dict[str, str], equivalents: dict[str, str]) -> dict[str, object]:
    """Counts and the kill rate of one set of mutants (a scope or a module)."""
    counts = Counter(mine.values())
    checked = [n for n, s in mine.items() if s not in UNCHECKED]
    equivalent = {n for n in checked if mine[n] in UNDETECTED and n in equivalents}
    detected = [n for n in checked if mine[n] in DETECTED]
    judged = len(checked) - len(equivalent)
    return {
        "mutants": len(mine),
        "checked": len(checked),
        "killed": counts["killed"],
        "timeout": counts["timeout"],
        "equivalent": len(equivalent),
        "survived_not_equivalent": sum(
            1 for n in checked if mine[n] == "survived" and n not in equivalent
        ),
        "no_tests": sum(1 for n in checked if mine[n] == "no tests" and n not in equivalent),
        "not_checked": len(mine) - len(checked),
        "kill_rate": round(len(detected) / judged, 4) if judged else None,
    }


def report(statuses: dict[str, str], equivalents: dict[str, str]) -> dict[str, object]:
    """Per scope: its totals, each module's (so a bounded run says exactly which modules
    it checked whole, which in part and which not at all), and every survivor."""
    scopes: dict[str, object] = {}
    for scope, prefix in SCOPES.items():
        mine = {n: s for n, s in statuses.items() if n.startswith(prefix)}
        by_module: dict[str, dict[str, str]] = {}
        for name, status in mine.items():
            by_module.setdefault(name.split(".x", 1)[0], {})[name] = status
        modules = {m: _figures(ms, equivalents) for m, ms in sorted(by_module.items())}
        totals = _figures(mine, equivalents)
        scopes[scope] = {
            **totals,
            "checked_share": round(int(totals["checked"]) / len(mine), 4) if mine else None,
            "modules_checked_whole": [m for m, f in modules.items() if f["not_checked"] == 0],
            "modules_checked_in_part": [
                m for m, f in modules.items() if 0 < f["checked"] < f["mutants"]
            ],
            "modules_not_run": [m for m, f in modules.items() if f["checked"] == 0],
            "modules": modules,
            "survivors": {
                n: equivalents.get(
                    n, "NOT KILLED" if mine[n] == "survived" else "NO TEST REACHES IT"
                )
                for n in sorted(mine)
                if mine[n] in UNDETECTED
            },
        }
    stale = sorted(n for n in equivalents if statuses.get(n) not in UNDETECTED)
    return {"scopes": scopes, "equivalents_not_surviving": stale}


def pending(patterns: list[str]) -> list[str]:
    """Mutants matching ``patterns`` (fnmatch, as mutmut takes them) that no run has
    checked yet, or that no test detected and are not listed as equivalent: what the next
    `make mutate MUTANTS=...` should run (mutmut re-runs every mutant it is given by
    name, so naming only these resumes a module instead of starting it over)."""
    equivalents = tomllib.loads(EQUIVALENTS.read_text()).get("equivalent", {})
    return sorted(
        name
        for name, status in mutmut_results().items()
        if any(fnmatch(name, p) for p in patterns)
        and (status in UNCHECKED or (status in UNDETECTED and name not in equivalents))
    )


def main() -> None:
    if sys.argv[1:2] == ["--pending"]:
        print(" ".join(pending(sys.argv[2:])))
        return
    equivalents = tomllib.loads(EQUIVALENTS.read_text()).get("equivalent", {})
    result = report(mutmut_results(), equivalents)
    for scope, figures in result["scopes"].items():  # type: ignore[union-attr]
        print(
            f"{scope}: {figures['mutants']} mutants, {figures['checked']} checked: "
            f"{figures['killed']} killed, {figures['timeout']} timed out, "
            f"{figures['equivalent']} equivalent, {figures['survived_not_equivalent']} not killed, "
            f"{figures['no_tests']} reached by no test; kill rate {figures['kill_rate']}"
        )
        for name, why in figures["survivors"].items():
            print(f"  survived {name}: {why}")
    write_results("mutation", result)


if __name__ == "__main__":
    main()
