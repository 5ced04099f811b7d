"""The benchmarks' targets, in one table, and which of them a results file met.

Every ``bench/results/*.json`` carries ``targets_met``: for each target, the measured
value, the bound and whether it was met (`write_results` adds it). ``python
bench/targets.py`` re-evaluates the committed results files against this table (from
their recorded figures: nothing is measured again) and prints the verdicts.
"""

from __future__ import annotations

import json
import operator
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"
COSTART_POLICIES = ("atomic", "reserve")  # "independent" is the baseline, never a target


@dataclass(frozen=True)
class Target:
    name: str
    read: Callable[[dict[str, Any]], float]
    op: str  # ">=" or "<="
    bound: float


def _sim_targets() -> list[Target]:
    targets = []
    for policy in COSTART_POLICIES:
        targets.append(
            Target(
                f"mixed_{policy}_events_per_s",
                lambda r, p=policy: r["events"]["policies"][p]["events_per_s"],
                ">=",
                20_000,
            )
        )
        targets.append(
            Target(
                f"pai_{policy}_wall_s",
                lambda r, p=policy: r["pai_whole_sample"][p]["wall_s"],
                "<=",
                120,
            )
        )
    return targets


TARGETS: dict[str, list[Target]] = {
    "replay": [
        Target("restore_plus_tail_s", lambda r: r["figures"]["restore_plus_tail_s"], "<=", 1.0),
        Target("replay_vs_raw", lambda r: r["replay_vs_raw"], ">=", 0.40),
    ],
    "sim": _sim_targets(),
    "store": [
        Target(key, lambda r, k=key: r["ratios"][k], ">=", bound)
        for key, bound in (
            ("a_vs_raw", 0.8),
            ("b_vs_raw", 0.25),
            ("c_vs_raw", 0.40),
            ("a_vs_sqlite", 1.0),
            ("b_vs_sqlite", 1.0),
        )
    ],
    "placement": [
        Target(
            "group_4096_median_ms",
            lambda r: next(g["median_ms"] for g in r["group_64"] if g["nodes"] == 4096),
            "<=",
            10.0,
        ),
        Target("session_1000_median_s", lambda r: r["session"]["median_s"], "<=", 1.0),
        Target(
            "growth_per_node_ratio_max",
            lambda r: max(g["per_node_ratio"] for g in r["growth"]),
            "<=",
            1.0,
        ),
    ],
    "mutation": [
        Target("domain_kill_rate", lambda r: r["scopes"]["domain"]["kill_rate"], ">=", 0.95),
        # The kill rate is over the mutants checked: a bounded run that left some
        # unchecked has not shown the rate for the whole domain.
        Target("domain_checked_share", lambda r: r["scopes"]["domain"]["checked_share"], ">=", 1.0),
    ],
    "dispatch": [
        Target(
            "rest_16_vs_embedded_16", lambda r: r["ratios"]["rest_16_vs_embedded_16"], ">=", 0.5
        ),
        Target(
            "barrier_p99_vs_single_command",
            lambda r: r["ratios"]["barrier_p99_vs_single_command"],
            "<=",
            5.0,
        ),
        Target("kb_per_watcher", lambda r: r["figures"]["kb_per_watcher"], "<=", 50.0),
        Target(
            "watchers_all_in_order",
            lambda r: float(r["figures"]["watchers_all_in_order"]),
            ">=",
            1.0,
        ),
        Target("rss_live_mb", lambda r: r["figures"]["rss_live_mb"], "<=", 400.0),
        Target(
            "rss_live_after_listing_mb",
            lambda r: r["figures"]["rss_live_after_listing_mb"],
            "<=",
            400.0,
        ),
    ],
    # Informative only (ADR 0009 sets no bound): failover time is the lease's.
    "failover": [],
    # Informative only: PostgreSQL beside LMDB, no bound.
    "pg": [],
}

_OPS = {">=": operator.ge, "<=": operator.le}


def targets_met(bench: str, results: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Each target of ``bench``: measured value, bound, met. A figure missing from the
    results is reported as not met (never silently skipped)."""
    verdicts: dict[str, dict[str, Any]] = {}
    # A run of some parts ("dispatch-submits") is judged by its benchmark's targets.
    for target in TARGETS[bench if bench in TARGETS else bench.split("-", 1)[0]]:
        try:
            measured: float | None = target.read(results)
        except (KeyError, StopIteration, TypeError):
            measured = None
        met = measured is not None and _OPS[target.op](measured, target.bound)
        verdicts[target.name] = {
            "measured": measured,
            "target": f"{target.op} {target.bound:g}",
            "met": met,
        }
    return verdicts


def main() -> int:
    missed = 0
    for path in sorted(RESULTS.glob("*.json")):
        bench = path.stem
        if bench not in TARGETS:
            continue
        results = json.loads(path.read_text())
        results["targets_met"] = targets_met(bench, results)
        path.write_text(json.dumps(results, indent=2, sort_keys=True) + "\n")
        for name, verdict in results["targets_met"].items():
            missed += not verdict["met"]
            state = "met" if verdict["met"] else "NOT MET"
            print(
                f"{bench:10s} {name:28s} {verdict['measured']!s:>12} {verdict['target']:>8}  {state}"
            )
        if not TARGETS[bench]:
            print(f"{bench:10s} (informative: no targets)")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
