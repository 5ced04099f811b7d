"""The mutation-testing report: ``bench/results/mutation.json`` from the last `make mutate`
run (mutmut's own results), with every surviving mutant either listed as equivalent with
its reason (``bench/mutation_equivalents.toml``) or counted against the kill rate.

Kill rate = (killed + timed out) / (checked - equivalent): a mutant whose tests ran past
their time limit did not pass them; one no test reaches ("no tests") counts against it,
unless it is listed as equivalent (code no input reaches, e.g. a handler behind a check
that always raises first).
Target: >= 95% in the domain. A bounded run leaves some mutants "not checked": the
per-module counts say which.

Runs compose: each working copy has its own ``mutants/`` directory, so a module this run
did not check at all keeps its record from the committed report when that record was
made on the same source (``source_sha256``), marked ``from_earlier_run``; a record
without the hash or with another one is stale, and the module is reported as not run.
Carried records are judged again against today's equivalents list; totals are summed
from the module records.

Run: python bench/mutation_report.py   (after `make mutate`)
     python bench/mutation_report.py --with OTHER.json ...   (also carry the records of
     reports from other working copies, e.g. both sides of a merge of this file)
     python bench/mutation_report.py --pending 'costart.domain.policy.*'   (the mutants
     of a module still to run: unchecked, or undetected and not listed as equivalent)
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import tomllib
from collections import Counter
from collections.abc import Mapping, Sequence
from fnmatch import fnmatch
from pathlib import Path
from typing import Any

from common import RESULTS, write_results

ROOT = Path(__file__).resolve().parents[1]
EQUIVALENTS = Path(__file__).resolve().parent / "mutation_equivalents.toml"
REPORT = RESULTS / "mutation.json"
SCOPES = {
    "domain": "costart.domain.",
    "store_integrity": "costart.store.",
    "rest_auth": "costart.rest.auth.",
}
DETECTED = ("killed", "timeout")
UNCHECKED = ("not checked", "skipped")
# A mutant the tests did not tell apart: it passed them, or no test reached it.
UNDETECTED = ("survived", "no tests")
# What a module record holds as fact; the rest of its figures are judged from these.
FACTS = ("mutants", "checked", "killed", "timeout")


def mutmut_results() -> dict[str, str]:
    """Mutant name -> mutmut's status, for every mutant of this working copy's runs.

    A module whose source changed after its mutants were made (mutmut compares the same
    mtimes when it decides to remake them) has results for other code: its mutants are
    reported "not checked" until the next `make mutate` remakes them. With no
    ``mutants/`` directory at all, every mutant of today's source is "not checked"."""
    if not (ROOT / "mutants").is_dir():
        return dict.fromkeys(current_mutants(), "not checked")
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
        raise SystemExit("no mutmut results in mutants/: run `make mutate` first")
    for module in sorted({module_of(n) for n in statuses}):
        source = source_path(module)
        made = ROOT / "mutants" / source.relative_to(ROOT)
        if not made.exists() or source.stat().st_mtime > made.stat().st_mtime:
            print(
                f"{module}: source changed since its mutants were made; not checked",
                file=sys.stderr,
            )
            for name in statuses:
                if module_of(name) == module:
                    statuses[name] = "not checked"
    return statuses


def current_mutants() -> list[str]:
    """Every mutant mutmut would make of today's source (``[tool.mutmut] only_mutate``),
    named as mutmut names them; made in memory, no tests run."""
    try:
        from mutmut.mutation.file_mutation import mutate_file_contents
        from mutmut.utils.format_utils import get_mutant_name
    except ImportError as e:  # the API this needs is mutmut 3.8's
        raise SystemExit(f"cannot list mutants without a mutants/ directory: {e}") from e
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mutmut"]
    names = []
    for path in sorted(p.relative_to(ROOT) for p in (ROOT / "costart").rglob("*.py")):
        if any(fnmatch(str(path), p) for p in config["only_mutate"]):
            made = mutate_file_contents(str(path), (ROOT / path).read_text())
            names += [get_mutant_name(path, m) for m in made.mutant_names]
    return names


def module_of(mutant: str) -> str:
    """``costart.domain.world.xǁWorldǁapply__mutmut_1`` -> ``costart.domain.world``."""
    return mutant.split(".x", 1)[0]


def source_path(module: str) -> Path:
    """The file a module's mutants were made from (a package's ``__init__.py``)."""
    path = ROOT / Path(*module.split("."))
    return path.with_suffix(".py") if path.with_suffix(".py").exists() else path / "__init__.py"


def source_sha256(module: str) -> str:
    return hashlib.sha256(source_path(module).read_bytes()).hexdigest()


def module_record(mine: Mapping[str, str], sha256: str) -> dict[str, Any]:
    """The facts of one module's run: counts, the source they are about, and the mutants
    no test detected with mutmut's status for each (so a later report can judge them
    again against a longer equivalents list)."""
    counts = Counter(mine.values())
    return {
        "source_sha256": sha256,
        "mutants": len(mine),
        "checked": sum(1 for s in mine.values() if s not in UNCHECKED),
        "killed": counts["killed"],
        "timeout": counts["timeout"],
        "undetected": {n: s for n, s in sorted(mine.items()) if s in UNDETECTED},
    }


def judged(record: Mapping[str, Any], equivalents: Mapping[str, str]) -> dict[str, Any]:
    """A module record (or a scope's summed one) with its verdicts: equivalents counted
    out, every other undetected mutant counted in, and the kill rate."""
    undetected: dict[str, str] = record["undetected"]
    equivalent = {n for n in undetected if n in equivalents}
    judged_count = record["checked"] - len(equivalent)
    detected = record["killed"] + record["timeout"]
    return {
        **record,
        "equivalent": len(equivalent),
        "survived_not_equivalent": sum(
            1 for n, s in undetected.items() if s == "survived" and n not in equivalent
        ),
        "no_tests": sum(
            1 for n, s in undetected.items() if s == "no tests" and n not in equivalent
        ),
        "not_checked": record["mutants"] - record["checked"],
        "kill_rate": round(detected / judged_count, 4) if judged_count else None,
        "survivors": {
            n: equivalents.get(n, "NOT KILLED" if s == "survived" else "NO TEST REACHES IT")
            for n, s in undetected.items()
        },
    }


def carried(fresh: dict[str, Any], earlier: Mapping[str, Any] | None) -> dict[str, Any]:
    """``fresh`` (this run's record of a module), or the earlier run's record of it when
    this run checked none of its mutants and the earlier one, made on the same source,
    checked some. An earlier record without a hash, or with another, is stale: ``fresh``
    stands."""
    if fresh["checked"] or not earlier or not earlier.get("checked"):
        return fresh
    if earlier.get("source_sha256") != fresh["source_sha256"] or "undetected" not in earlier:
        return fresh
    facts = {k: earlier[k] for k in (*FACTS, "source_sha256", "undetected")}
    return {**facts, "from_earlier_run": True}


def report(
    statuses: Mapping[str, str],
    equivalents: Mapping[str, str],
    earlier: Sequence[Mapping[str, Any]] = (),
    sha256: Any = source_sha256,
) -> dict[str, Any]:
    """Per scope: its totals, each module's (so a bounded run says exactly which modules
    it checked whole, which in part and which not at all), and every survivor.
    ``earlier``: reports (the committed one, and any from other working copies) whose
    records of modules this run did not check are carried when still true, the one that
    checked most when several are; ``sha256`` hashes a module's current source."""
    earlier_modules: dict[str, list[Mapping[str, Any]]] = {}
    for old in earlier:
        for scope in old.get("scopes", {}).values():
            for m, r in scope.get("modules", {}).items():
                earlier_modules.setdefault(m, []).append(r)

    def record(module: str, mine: Mapping[str, str]) -> dict[str, Any]:
        fresh = module_record(mine, sha256(module))
        candidates = [carried(fresh, r) for r in earlier_modules.get(module, [])]
        return max(candidates, key=lambda r: r["checked"], default=fresh)

    scopes: dict[str, Any] = {}
    for scope, prefix in SCOPES.items():
        by_module: dict[str, dict[str, str]] = {}
        for name, status in statuses.items():
            if name.startswith(prefix):
                by_module.setdefault(module_of(name), {})[name] = status
        modules = {m: judged(record(m, ms), equivalents) for m, ms in sorted(by_module.items())}
        summed: dict[str, Any] = {k: sum(f[k] for f in modules.values()) for k in FACTS}
        summed["undetected"] = {n: s for f in modules.values() for n, s in f["undetected"].items()}
        totals = judged(summed, equivalents)
        del totals["undetected"]
        scopes[scope] = {
            **totals,
            "checked_share": round(totals["checked"] / totals["mutants"], 4)
            if totals["mutants"]
            else None,
            "modules_checked_whole": [m for m, f in modules.items() if f["not_checked"] == 0],
            "modules_checked_in_part": [
                m for m, f in modules.items() if 0 < f["checked"] < f["mutants"]
            ],
            "modules_not_run": [m for m, f in modules.items() if f["checked"] == 0],
            "modules_from_earlier_runs": [
                m for m, f in modules.items() if f.get("from_earlier_run")
            ],
            "modules": {
                m: {k: v for k, v in f.items() if k != "survivors"} for m, f in modules.items()
            },
        }
    undetected = {
        n for s in scopes.values() for f in s["modules"].values() for n in f["undetected"]
    }
    checked_modules = {m for s in scopes.values() for m, f in s["modules"].items() if f["checked"]}
    stale = sorted(
        n for n in equivalents if module_of(n) in checked_modules and n not in undetected
    )
    return {"scopes": scopes, "equivalents_not_surviving": stale}


def load_equivalents() -> dict[str, str]:
    return dict(tomllib.loads(EQUIVALENTS.read_text()).get("equivalent", {}))


def pending(patterns: list[str]) -> list[str]:
    """Mutants matching ``patterns`` (fnmatch, as mutmut takes them) that no run has
    checked yet, or that no test detected and are not listed as equivalent: what the next
    `make mutate MUTANTS=...` should run (mutmut re-runs every mutant it is given by
    name, so naming only these resumes a module instead of starting it over)."""
    equivalents = load_equivalents()
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
    others = sys.argv[sys.argv.index("--with") + 1 :] if "--with" in sys.argv else []
    paths = [REPORT, *map(Path, others)] if REPORT.exists() else list(map(Path, others))
    earlier = [json.loads(p.read_text()) for p in paths]
    result = report(mutmut_results(), load_equivalents(), earlier)
    for scope, figures in result["scopes"].items():
        print(
            f"{scope}: {figures['mutants']} mutants, {figures['checked']} checked: "
            f"{figures['killed']} killed, {figures['timeout']} timed out, "
            f"{figures['equivalent']} equivalent, {figures['survived_not_equivalent']} not killed, "
            f"{figures['no_tests']} reached by no test; kill rate {figures['kill_rate']}; "
            f"carried from earlier runs: {', '.join(figures['modules_from_earlier_runs']) or 'none'}"
        )
        for name, why in figures["survivors"].items():
            print(f"  survived {name}: {why}")
    write_results("mutation", result)


if __name__ == "__main__":
    main()
