"""Benchmark: scheduling quality of every placement policy on eight workloads.

Not a test (its CI checks are `tests/sim/test_scheduling_quality.py` and
`tests/sim/test_backfill_quality.py`, one or two seeds). For the mixed, starvation,
starvation-backfill (the same workload with what backfill needs declared),
deadlock-trap, half-partition and llm-day scenarios (the last two written from published
trace shapes before any tuning, ADR 0114) and the PAI and DLRM traces, over N seeds (20 by default), every
policy: per workload first (time to start p50/p99, never started, wasted GPU-hours in
its three parts: idle-held, partial-start, thrown away; restarts), then pooled (gang and
small-job time to start, the same waste, restarts, preemptions, limit kills, groups
arriving after the horizon, utilisation), each as the median over seeds with its range
(a wait marked ">=" holds censored waits of groups that never started). Compares the
policies on starvation-backfill (the workload's ``targets``), judges those comparisons
against `targets.TARGETS["scheduling"]` (``targets_met``) and writes
bench/results/scheduling.json (a run of some workloads keeps the others' entries from
the file).

Run: python bench/bench_scheduling.py [--seeds N] [--first-seed K] [--workloads a,b]
     [--policies a,b] [--traces PATH] [--trace-groups N] [--add-runs FILE]
(the PAI and DLRM workloads read the full traces in --traces or $COSTART_TRACES, and
are skipped without them).

Runs are kept per workload, policy and seed: runs of other seeds already in the output
file (or in ``--add-runs`` files, other parts of the same benchmark run elsewhere, e.g.
seeds 11-20 in a second process) are summarised with this run's, and policies recorded
but not run this time keep their runs.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec

from costart.cli.sim_cmd import controller_factory
from costart.logging_setup import configure_logging
from costart.sim.quality import RunFigures, Spread, measure, summarise, summarise_workloads
from costart.sim.recommended_policy import RECOMMENDED_POLICY
from costart.sim.results import ALL_POLICIES, BACKFILL_POLICY
from costart.sim.scenario import load_scenario
from costart.sim.setup import SimSetup, draw_setup
from costart.sim.trace_setup import TraceOptions, trace_setup

ROOT = Path(__file__).resolve().parents[1]
# The targets table sits beside this script; tests load the script by its path.
sys.path.insert(0, str(ROOT / "bench"))
from targets import targets_met  # noqa: E402

RESULTS = ROOT / "bench" / "results" / "scheduling.json"
SCENARIOS = (
    "mixed",
    "starvation",
    "starvation-backfill",
    "deadlock-trap",
    "half-partition",
    "llm-day",
)
TARGETS_ON = "starvation-backfill"
TRACES = ("pai", "dlrm")
# "as-specified": each spec's own mode (in the scenarios, gangs reserve and small jobs
# are atomic), beside every group forced to one mode; "recommended": each spec in the
# mode the rule of ADR 0115 gives it.
BENCH_POLICIES = (*ALL_POLICIES[:4], "as-specified", RECOMMENDED_POLICY, *ALL_POLICIES[4:])


def setups_for(name: str, traces: Path, trace_groups: int) -> Callable[[int], SimSetup]:
    if name in SCENARIOS:
        scenario = load_scenario(ROOT / "scenarios" / f"sim-{name}.toml")
        return lambda seed: draw_setup(scenario, seed)
    if name == "pai":
        options = TraceOptions(max_groups=trace_groups, compress=50.0)
    else:
        options = TraceOptions(max_groups=trace_groups)
    return lambda seed: trace_setup("pai" if name == "pai" else "dlrm", traces, seed, options)


def _text(spread: Spread) -> str:
    if spread.median is None:
        return "-"
    return f"{spread.median:g} [{spread.low:g}..{spread.high:g}]"


def starvation_targets(
    summary: dict[str, dict[str, Spread]], plain: dict[str, Spread] | None = None
) -> dict[str, object]:
    """Issue 21's targets on one workload's summary (medians over seeds): reserve-backfill
    against atomic and against plain reserve — ``plain``: reserve on the same workload
    with nothing declared (sim-starvation.toml), where nothing is lent or stopped; on
    the backfill variant even ``reserve`` stops lower preemptible work (ADR 0045), so
    that comparison is given beside it."""
    backfill = summary.get(BACKFILL_POLICY)
    reserve, atomic = summary.get("reserve"), summary.get("atomic")
    if backfill is None or reserve is None or atomic is None:
        return {"status": f"not measured: run {BACKFILL_POLICY}, reserve and atomic"}

    def median(figures: dict[str, Spread], name: str) -> float:
        value = figures[name].median
        return float("inf") if value is None else value

    baseline = plain if plain is not None else reserve
    gang = [median(p, "gang_time_to_start_p99_s") for p in (backfill, baseline, reserve)]
    idle = [median(p, "idle_held_gpu_hours") for p in (backfill, baseline, reserve)]
    wasted = [
        median(p, "wasted_gpu_hours") if "wasted_gpu_hours" in p else float("inf")
        for p in (backfill, baseline, reserve)
    ]
    small = [median(p, "small_time_to_start_p50_s") for p in (backfill, atomic)]
    return {
        "plain_reserve": "sim-starvation.toml" if plain is not None else "this workload",
        "gang_p99_at_most_reserve": {
            "met": gang[0] <= gang[1],
            "backfill_plain_reserve_reserve_here_s": gang,
        },
        "idle_held_at_most_25pct_of_reserve": {
            "met": idle[0] <= 0.25 * idle[1],
            "backfill_plain_reserve_reserve_here_gpu_hours": idle,
            "ratio": round(idle[0] / idle[1], 3) if idle[1] else None,
            "ratio_to_reserve_here": round(idle[0] / idle[2], 3) if idle[2] else None,
        },
        # Not a target: idle-held alone hides the work preemptions throw away.
        "wasted_gpu_hours_backfill_plain_reserve_reserve_here": wasted,
        "small_p50_within_10pct_of_atomic": {
            "met": small[0] <= 1.1 * small[1],
            "backfill_atomic_s": small,
            "ratio": round(small[0] / small[1], 3) if small[1] else None,
        },
    }


def _plain_reserve(workloads: dict[str, Any]) -> dict[str, Spread] | None:
    """Plain reserve's summary on sim-starvation.toml, if the results hold it."""
    recorded = workloads.get("starvation", {}).get("summary", {}).get("reserve")
    return None if recorded is None else msgspec.convert(recorded, dict[str, Spread])


def _wait(figures: dict[str, Spread], field: str, never: str) -> str:
    """A time-to-start spread, marked ">=" when some seed's waits are censored."""
    censored = (figures[never].high or 0) > 0
    return ("≥" if censored else "") + _text(figures[field]) + "s"


def _waste(figures: dict[str, Spread], partial: str) -> str:
    return (
        f"wasted {_text(figures['wasted_gpu_hours'])} GPU-h ="
        f" idle-held {_text(figures['idle_held_gpu_hours'])}"
        f" + partial {_text(figures[partial])}"
        f" + thrown away {_text(figures['thrown_away_gpu_hours'])};"
        f" restarts {_text(figures['restarts'])}"
    )


def print_summary(
    summary: dict[str, dict[str, Spread]], per_workload: dict[str, dict[str, dict[str, Spread]]]
) -> None:
    """Per-workload rows first, the pooled row of each policy last and labelled."""
    for policy, workloads in per_workload.items():
        for workload, f in workloads.items():
            print(
                f"  {policy:16} {workload:18} p50 {_wait(f, 'time_to_start_p50_s', 'never_started')}"
                f" p99 {_wait(f, 'time_to_start_p99_s', 'never_started')}"
                f" (never started {_text(f['never_started'])}); {_waste(f, 'partial_start_gpu_hours')}"
            )
    for policy, figures in summary.items():
        print(
            f"  {policy:16} POOLED gang p50"
            f" {_wait(figures, 'gang_time_to_start_p50_s', 'gang_never_started')}"
            f" p99 {_wait(figures, 'gang_time_to_start_p99_s', 'gang_never_started')}"
            f" (never {_text(figures['gang_never_started'])});"
            f" small p50 {_wait(figures, 'small_time_to_start_p50_s', 'small_never_started')}"
            f" p99 {_wait(figures, 'small_time_to_start_p99_s', 'small_never_started')};"
            f" {_waste(figures, 'partial_start_gpu_hours')};"
            f" preemptions {_text(figures['preemptions'])};"
            f" after horizon {_text(figures['after_horizon'])};"
            f" util {_text(figures['utilization'])}"
        )


def _cell(figures: dict[str, Spread], field: str, never: str | None = None) -> str:
    """A median, marked ">=" when some seed's waits are censored."""
    value = figures.get(field, Spread(None, None, None)).median
    if value is None:
        return "-"
    censored = never is not None and (figures[never].high or 0) > 0
    return ("≥" if censored else "") + f"{value:g}"


def print_table(summary: dict[str, dict[str, Spread]]) -> None:
    """One workload's table, a row per policy (medians over seeds): gang and small-job
    time to start, wasted GPU-hours in its three parts, utilisation of useful work
    (busy minus thrown away) and groups never started."""
    columns = (
        "policy",
        "gang p50 s",
        "gang p99 s",
        "small p50 s",
        "small p99 s",
        "wasted",
        "= idle",
        "+ partial",
        "+ thrown",
        "useful util",
        "never gang/small",
    )
    print(f"  {columns[0]:16} | " + " | ".join(f"{c:>11}" for c in columns[1:]))
    for policy, f in summary.items():
        cells = (
            policy,
            _cell(f, "gang_time_to_start_p50_s", "gang_never_started"),
            _cell(f, "gang_time_to_start_p99_s", "gang_never_started"),
            _cell(f, "small_time_to_start_p50_s", "small_never_started"),
            _cell(f, "small_time_to_start_p99_s", "small_never_started"),
            _cell(f, "wasted_gpu_hours"),
            _cell(f, "idle_held_gpu_hours"),
            _cell(f, "partial_start_gpu_hours"),
            _cell(f, "thrown_away_gpu_hours"),
            _cell(f, "useful_utilization"),
            f"{_cell(f, 'gang_never_started')}/{_cell(f, 'small_never_started')}",
        )
        print(f"  {cells[0]:16} | " + " | ".join(f"{c:>11}" for c in cells[1:]))


def print_peer_verdicts(name: str, verdicts: dict[str, dict[str, Any]]) -> None:
    """The workload's issue 35 targets: the recommended policy against the best peer."""
    prefix = f"{name.replace('-', '_')}_{RECOMMENDED_POLICY}_"
    for target, verdict in verdicts.items():
        if target.startswith(prefix):
            state = "met" if verdict["met"] else "NOT MET"
            short = target.removeprefix(prefix)
            print(f"  {short:42} {verdict['measured']!s:>10} {verdict['target']}  {state}")


def with_runs_of_other_seeds(
    runs: dict[str, list[RunFigures]], recorded: dict[str, list[Any]]
) -> dict[str, list[RunFigures]]:
    """``runs`` plus the recorded runs (JSON) for other seeds, by seed; a policy recorded
    but not run this time keeps its recorded runs (a run of some policies adds to the
    entry rather than dropping the others)."""
    out: dict[str, list[RunFigures]] = {}
    for policy in [*runs, *(p for p in recorded if p not in runs)]:
        fresh = runs.get(policy, [])
        seeds = {r.seed for r in fresh}
        older = [msgspec.convert(r, RunFigures) for r in recorded.get(policy, [])]
        merged = [*fresh, *(r for r in older if r.seed not in seeds)]
        out[policy] = sorted(merged, key=lambda r: r.seed)
    return out


def main(argv: list[str] | None = None) -> dict[str, object]:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--workloads", default=",".join((*SCENARIOS, *TRACES)))
    parser.add_argument("--policies", default=",".join(BENCH_POLICIES))
    default = os.environ.get("COSTART_TRACES") or None
    parser.add_argument("--traces", type=Path, default=default)
    parser.add_argument("--trace-groups", type=int, default=150)
    parser.add_argument("--first-seed", type=int, default=1)
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--add-runs", type=Path, action="append", default=[])
    args = parser.parse_args(argv)
    configure_logging(level=logging.WARNING)
    policies = [p for p in args.policies.split(",") if p]
    seeds = list(range(args.first_seed, args.first_seed + args.seeds))
    results: dict[str, object] = {
        "benchmark": "scheduling quality per policy (virtual time; medians over each "
        "workload's seeds)",
        "workloads": {},
    }
    workloads: dict[str, Any] = {}
    if args.out.exists():  # the workloads not run this time keep their entries
        kept = msgspec.json.decode(args.out.read_bytes())
        workloads.update(kept.get("workloads", {}))
    added = [msgspec.json.decode(f.read_bytes()).get("workloads", {}) for f in args.add_runs]
    for name in [w for w in args.workloads.split(",") if w]:
        if name in TRACES and (args.traces is None or not (args.traces / "README.md").exists()):
            where = args.traces or "$COSTART_TRACES"
            print(f"no traces at {where}: {name} skipped", file=sys.stderr)
            continue

        def progress(policy: str, seed: int, figures: RunFigures, name: str = name) -> None:
            print(f"\r{name} seed {seed} {policy}      ", end="", file=sys.stderr, flush=True)

        runs = measure(
            setups_for(name, args.traces, args.trace_groups),
            seeds,
            policies,
            controller_factory,
            progress,
        )
        print(file=sys.stderr)
        for earlier in (workloads.get(name, {}), *(a.get(name, {}) for a in added)):
            runs = with_runs_of_other_seeds(runs, earlier.get("runs", {}))
        summary = {p: summarise(r) for p, r in runs.items()}
        per_workload = {p: summarise_workloads(r) for p, r in runs.items()}
        entry: dict[str, object] = {
            "summary_by_workload": msgspec.to_builtins(per_workload),
            "summary": msgspec.to_builtins(summary),
            "runs": msgspec.to_builtins(runs),
        }
        if name == TARGETS_ON:
            entry["targets"] = starvation_targets(summary, _plain_reserve(workloads))
        all_seeds = sorted({r.seed for rs in runs.values() for r in rs})
        entry["seeds"] = all_seeds
        # A policy measured on fewer seeds than the others says so beside its figures.
        entry["seeds_per_policy"] = {p: len(rs) for p, rs in runs.items()}
        workloads[name] = entry
        counts = sorted({len(rs) for rs in runs.values()})
        print(f"== {name} ({len(all_seeds)} seeds; per policy {counts}): median [min..max]")
        print_summary(summary, per_workload)
        print_table(summary)
        print_peer_verdicts(name, targets_met("scheduling", {"workloads": {name: entry}}))
        if "targets" in entry:
            print(f"  targets: {msgspec.json.encode(entry['targets']).decode()}")
    results["workloads"] = workloads
    results["targets_met"] = targets_met("scheduling", results)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_bytes(msgspec.json.format(msgspec.json.encode(results), indent=2) + b"\n")
    print(f"wrote {args.out}")
    return results


if __name__ == "__main__":
    main()
