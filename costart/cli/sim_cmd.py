"""`costart sim`: the real controller on a virtual clock, policies compared in one run.

Register it on the main app with ``costart.cli.sim_cmd.register(app)`` (or mount
``costart.cli.sim_cmd.app``). The simulator (`costart.sim`) may not import the
application; it gets its Controller from the composition root's factory
(`costart.bootstrap.sim_controller_factory`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, cast

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn
from rich.table import Table

from costart.bootstrap import sim_controller_factory
from costart.domain.durations import parse_duration_ns
from costart.logs import configure_logging
from costart.sim.engine import Engine
from costart.sim.report import Report, build_report, report_json, write_plot
from costart.sim.results import POLICIES, PolicyResult, run_policy
from costart.sim.scenario import ScenarioError, load_scenario
from costart.sim.setup import SimSetup, describe_setup, draw_setup
from costart.sim.trace_setup import TRACE_KINDS, TraceKind, TraceOptions, trace_setup

EXIT_INVALID = 3
app = typer.Typer(add_completion=False, help="Simulate co-start groups.")


# The real Controller for the simulator, as every simulated run builds it.
controller_factory = sim_controller_factory()


def results_table(report: Report) -> Table:
    """The policies side by side."""
    table = Table(title=f"{report.scenario} — seed {report.seed}")
    table.add_column("figure")
    for result in report.policies:
        table.add_column(result.policy, justify="right")
    rows: list[tuple[str, Callable[[PolicyResult], object]]] = [
        ("groups (rejected)", lambda r: f"{r.groups} ({r.rejected})"),
        ("started / never started", lambda r: f"{r.started} / {r.never_started}"),
        ("succeeded / failed / cancelled", lambda r: f"{r.succeeded}/{r.failed}/{r.cancelled}"),
        ("time to start p50 (s)", lambda r: r.time_to_start_p50_s),
        ("time to start p90 (s)", lambda r: r.time_to_start_p90_s),
        ("time to start p99 (s)", lambda r: r.time_to_start_p99_s),
        ("idle-held GPU-hours", lambda r: r.idle_held_gpu_hours),
        ("partial starts", lambda r: r.partial_starts),
        ("partial-start waste GPU-hours", lambda r: r.partial_start_waste_gpu_hours),
        ("deadlocked groups", lambda r: r.deadlocked),
        ("utilization (busy/capacity)", lambda r: f"{r.utilization:.1%}"),
        ("invariant checks passed", lambda r: r.invariant_checks),
        ("events audited", lambda r: r.events_audited),
        (
            "controller restarts (checked)",
            lambda r: f"{r.controller_restarts} ({r.restore_checks})",
        ),
        ("node losses", lambda r: r.node_losses),
        ("end (virtual s, why)", lambda r: f"{r.end_s:.0f} {r.end_reason}"),
    ]
    for label, value in rows:
        table.add_row(label, *("-" if value(r) is None else str(value(r)) for r in report.policies))
    return table


def run_report(
    setup: SimSetup, policies: list[str], console: Console | None = None
) -> tuple[Report, list[float]]:
    """Run every policy over ``setup``; returns the report and each run's wall seconds."""
    import time  # noqa: PLC0415 - wall time is for the operator only, never in the report

    results: list[PolicyResult] = []
    rejected: list[str] = []
    walls: list[float] = []
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[status]}"),
        console=Console(stderr=True),
        disable=console is None,
    ) as progress:
        for policy in policies:
            task = progress.add_task(policy, total=len(setup.workload.arrivals), status="")

            def tick(engine: Engine, task: TaskID = task) -> None:
                progress.update(
                    task,
                    completed=engine.embedder.arrived,
                    status=f"t={engine.now_ns / 3.6e12:.1f}h steps={engine.counters.steps}",
                )

            start = time.perf_counter()
            result, engine = run_policy(setup, policy, controller_factory, tick)
            walls.append(time.perf_counter() - start)
            tick(engine)
            results.append(result)
            rejected = rejected or engine.embedder.rejected
    return build_report(setup, results, rejected), walls


def sim(
    source: Annotated[Path, typer.Argument(help="a sim scenario file, or the traces folder")],
    trace: Annotated[
        str | None, typer.Option(help=f"read SOURCE as a real trace: {'|'.join(TRACE_KINDS)}")
    ] = None,
    seed: Annotated[int, typer.Option(help="the one seed every draw comes from")] = 1,
    policies: Annotated[str, typer.Option(help="comma-separated")] = ",".join(POLICIES),
    max_groups: Annotated[int | None, typer.Option(help="traces: first N groups")] = None,
    compress: Annotated[float, typer.Option(help="traces: arrivals N times denser")] = 1.0,
    node_losses: Annotated[int, typer.Option(help="traces: node losses to draw")] = 0,
    controller_crashes: Annotated[int, typer.Option(help="traces: controller crashes")] = 0,
    session_interval: Annotated[str, typer.Option(help="traces: session period")] = "10s",
    out: Annotated[Path, typer.Option(help="folder for report.json and report.png")] = Path(
        "sim-report"
    ),
    verbose: Annotated[bool, typer.Option(help="controller logs on stderr")] = False,
) -> None:
    """Run the real controller on a virtual clock; compare atomic, reserve and independent."""
    configure_logging(level=logging.INFO if verbose else logging.WARNING)
    console = Console()
    try:
        if trace is not None:
            if trace not in TRACE_KINDS:
                raise typer.BadParameter(f"--trace must be one of {', '.join(TRACE_KINDS)}")
            options = TraceOptions(
                max_groups=max_groups,
                compress=compress,
                node_losses=node_losses,
                controller_crashes=controller_crashes,
                session_interval_ns=parse_duration_ns(session_interval),
            )
            setup = trace_setup(cast(TraceKind, trace), source, seed, options)
        else:
            setup = draw_setup(load_scenario(source), seed)
    except ScenarioError as error:
        typer.echo(f"invalid scenario {source}: {error}", err=True)
        raise typer.Exit(EXIT_INVALID) from None
    for line in describe_setup(setup):
        console.print(line, highlight=False, markup=False)
    chosen = [p.strip() for p in policies.split(",") if p.strip()]
    report, walls = run_report(setup, chosen, console)
    console.print(results_table(report))
    for policy, wall in zip(chosen, walls, strict=True):
        console.print(f"{policy}: {wall:.1f}s wall", highlight=False)
    out.mkdir(parents=True, exist_ok=True)
    (out / "report.json").write_bytes(report_json(report))
    write_plot(report, sum(n.gpu for n in setup.cluster.nodes), out / "report.png")
    console.print(f"wrote {out / 'report.json'} and {out / 'report.png'}")


def register(main_app: typer.Typer) -> None:
    """Add ``costart sim`` to the main command line."""
    main_app.command("sim")(sim)


app.command("sim")(sim)
