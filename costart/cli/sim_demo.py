"""`costart demo`: a short simulation of RL post-training runs on the demo cluster.

The three start policies run on the same seeded workload (RL runs with crashing
rollouts, node losses and controller crashes). The costart ``reserve`` run writes its
log to the demo store, so `costart get groups`, `describe` and `replay` can open it.

The headline comes first, printed and drawn: what the naive start (``independent``)
wastes — partial starts, wasted GPU-hours (idle-held + partial-start + thrown away) and
failed groups — against costart's policies. Idle-held capacity alone is the price of a
barrier, not the whole bill, so it is never shown alone.
"""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from costart.cli.sim_cmd import results_table, run_report
from costart.sim.report import SimReport, report_json, write_plot
from costart.sim.results import POLICIES, PolicyResult
from costart.sim.scenario import load_scenario
from costart.sim.setup import describe_setup, draw_setup

SCENARIO = Path(__file__).resolve().parents[2] / "scenarios" / "sim-rl-post-training.toml"
LOGGED_POLICY = "reserve"
SEED = 1


def _bill(result: PolicyResult) -> str:
    return (
        f"{result.policy}: {result.partial_starts} partial starts, "
        f"{result.wasted_gpu_hours:.0f} wasted GPU-hours, {result.failed} failed groups"
    )


def headline(report: SimReport) -> str:
    """One line per policy, the naive baseline first: what each start wastes."""
    by_policy = {r.policy: r for r in report.policies}
    order = ["independent", *(p for p in by_policy if p != "independent")]
    return "\n".join(_bill(by_policy[p]) for p in order if p in by_policy)


def run_sim_demo(store: Path, report_dir: Path, console: Console) -> list[PolicyResult]:
    setup = draw_setup(load_scenario(SCENARIO), SEED)
    for line in describe_setup(setup):
        console.print(line, highlight=False, markup=False)
    report, _ = run_report(setup, list(POLICIES), log=(LOGGED_POLICY, store))
    lines = headline(report)
    console.print(
        "[bold]Wasted by each start policy[/bold] (idle-held + partial-start + thrown away):"
    )
    console.print(lines, highlight=False, markup=False)
    console.print(results_table(report))
    report_dir.mkdir(parents=True, exist_ok=True)
    (report_dir / "report.json").write_bytes(report_json(report))
    capacity = sum(n.gpu for n in setup.cluster.nodes)
    write_plot(report, capacity, report_dir / "report.png", headline=lines)
    console.print(f"report: {report_dir / 'report.json'} and {report_dir / 'report.png'}")
    return report.policies
