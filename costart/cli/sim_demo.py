"""`costart demo`: a short simulation of RL post-training runs on the demo cluster.

The three start policies run on the same seeded workload (RL runs with crashing
rollouts, node losses and controller crashes). The costart ``reserve`` run writes its
log to the demo store, so `costart get groups`, `describe` and `replay` can open it.
"""

from __future__ import annotations

from pathlib import Path
from typing import cast

from rich.console import Console

from costart.app import Controller
from costart.bootstrap import Settings, sim_controller_factory
from costart.cli.sim_cmd import results_table
from costart.sim.report import build_report, report_json, write_plot
from costart.sim.results import POLICIES, PolicyResult, run_policy
from costart.sim.scenario import load_scenario
from costart.sim.setup import describe_setup, draw_setup

SCENARIO = Path(__file__).resolve().parents[2] / "scenarios" / "sim-rl-post-training.toml"
LOGGED_POLICY = "reserve"
SEED = 1


def run_sim_demo(store: Path, report_dir: Path, console: Console) -> list[PolicyResult]:
    setup = draw_setup(load_scenario(SCENARIO), SEED)
    for line in describe_setup(setup):
        console.print(line, highlight=False, markup=False)
    results: list[PolicyResult] = []
    rejected: list[str] = []
    for policy in POLICIES:
        settings = Settings(store=str(store), cluster=None) if policy == LOGGED_POLICY else None
        result, engine = run_policy(setup, policy, sim_controller_factory(settings))
        results.append(result)
        rejected = rejected or engine.embedder.rejected
        if policy == LOGGED_POLICY:
            cast(Controller, engine.controller).close()
    report = build_report(setup, results, rejected)
    console.print(results_table(report))
    report_dir.mkdir(parents=True, exist_ok=True)
    (report_dir / "report.json").write_bytes(report_json(report))
    write_plot(report, sum(n.gpu for n in setup.cluster.nodes), report_dir / "report.png")
    console.print(f"report: {report_dir / 'report.json'} and {report_dir / 'report.png'}")
    return results
