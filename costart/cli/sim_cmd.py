"""`costart sim`: the real controller on a virtual clock, policies compared in one run.

Register it on the main app with ``costart.cli.sim_cmd.register(app)`` (or mount
``costart.cli.sim_cmd.app``). The simulator (`costart.sim`) may not import the
application; it gets its Controller from the composition root's factory
(`costart.bootstrap.sim_controller_factory`).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Annotated, TypedDict, cast

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn
from rich.table import Table

from costart.bootstrap import Settings, sim_controller_factory
from costart.cli.exits import EXIT_USAGE, UsageError, reported
from costart.cli.tables import plain_table
from costart.cli.target import Target
from costart.controller import Controller
from costart.display import clock, duration
from costart.domain.durations import parse_duration_ns
from costart.files import UnreadableFileError, why_unreadable
from costart.logging_setup import configure_logging
from costart.placement.cluster_file import cluster_document
from costart.sim.breakdown import WorkloadFigures
from costart.sim.engine import Engine
from costart.sim.outside_load import ALLOCATORS, with_outside_load
from costart.sim.recommended_policy import RECOMMENDED_POLICY
from costart.sim.report import SimReport, build_report, report_json, write_plot
from costart.sim.results import ALL_POLICIES, PolicyResult, run_policy
from costart.sim.scenario import OutsideLoadDoc, ScenarioError, load_scenario
from costart.sim.setup import SimSetup, describe_setup, draw_setup
from costart.sim.trace_setup import (
    TRACE_KINDS,
    TRACES_ENV,
    TraceKind,
    TraceOptions,
    trace_setup,
)

EXIT_INVALID = 3
app = typer.Typer(add_completion=False, rich_markup_mode=None, help="Simulate co-start groups.")


# The real Controller for the simulator, as every simulated run builds it.
controller_factory = sim_controller_factory()


def seconds_text(seconds: float | None) -> str:
    """A report's seconds (a JSON float) as a duration in two units, ``-`` if none."""
    return "-" if seconds is None else duration(round(seconds * 1e9))


def censored(text: str, waits: int) -> str:
    """A time to start that holds censored waits (groups that never started, counted
    until the run ended) is a lower bound: marked ``≥``."""
    return f"≥{text}" if waits and text != "-" else text


def results_table(report: SimReport) -> Table:
    """The policies side by side, pooled over every workload (the per-workload table
    comes first: a pooled percentile hides which workload waits)."""
    names = [r.policy for r in report.policies]
    table = plain_table(
        ["figure", *names],
        title=f"{report.scenario} — seed {report.seed}, POOLED over all workloads",
        right=names,
    )
    rows: list[tuple[str, Callable[[PolicyResult], object]]] = [
        ("groups (rejected)", lambda r: f"{r.groups} ({r.rejected})"),
        ("arrived after the horizon (left out)", lambda r: r.after_horizon),
        ("started / never started", lambda r: f"{r.started} / {r.never_started}"),
        ("succeeded / failed / cancelled", lambda r: f"{r.succeeded}/{r.failed}/{r.cancelled}"),
        (
            "time to start p50",
            lambda r: censored(seconds_text(r.time_to_start_p50_s), r.censored_waits),
        ),
        (
            "time to start p90",
            lambda r: censored(seconds_text(r.time_to_start_p90_s), r.censored_waits),
        ),
        (
            "time to start p99",
            lambda r: censored(seconds_text(r.time_to_start_p99_s), r.censored_waits),
        ),
        ("wasted GPU-hours (the 3 below)", lambda r: f"{r.wasted_gpu_hours:.1f}"),
        ("  idle-held GPU-hours", lambda r: f"{r.idle_held_gpu_hours:.1f}"),
        ("  partial-start waste GPU-hours", lambda r: f"{r.partial_start_waste_gpu_hours:.1f}"),
        ("  thrown-away GPU-hours", lambda r: f"{r.thrown_away_gpu_hours:.1f}"),
        (
            "restarts / preemptions / limit kills",
            lambda r: f"{r.restarts}/{r.preemptions}/{r.limit_kills}",
        ),
        ("partial starts", lambda r: r.partial_starts),
        ("deadlocked groups", lambda r: r.deadlocked),
        ("utilization (busy/capacity)", lambda r: f"{r.utilization:.1%}"),
        ("invariant checks passed", lambda r: r.invariant_checks),
        ("events audited", lambda r: r.events_audited),
        (
            "controller restarts (checked)",
            lambda r: f"{r.controller_restarts} ({r.restore_checks})",
        ),
        ("node losses", lambda r: r.node_losses),
        ("other work placed / binds raced", lambda r: f"{r.outside_work} / {r.binds_raced}"),
        ("end (virtual time, why)", lambda r: f"{seconds_text(r.end_s)} {r.end_reason}"),
    ]
    for label, value in rows:
        table.add_row(label, *("-" if value(r) is None else str(value(r)) for r in report.policies))
    return table


def workload_table(report: SimReport) -> Table:
    """The per-group figures per workload, the policies side by side."""
    table = Table(
        title=f"{report.scenario} — seed {report.seed}, by workload "
        "(≥: includes groups that never started, counted until the run ended)"
    )
    table.add_column("workload", no_wrap=True)
    table.add_column("figure", no_wrap=True)
    for result in report.policies:
        table.add_column(result.policy, justify="right")
    rows: list[tuple[str, Callable[[WorkloadFigures], object]]] = [
        ("groups started / never", lambda w: f"{w.started} / {w.never_started}"),
        (
            "time to start p50",
            lambda w: censored(seconds_text(w.time_to_start_p50_s), w.censored_waits),
        ),
        (
            "time to start p99",
            lambda w: censored(seconds_text(w.time_to_start_p99_s), w.censored_waits),
        ),
        ("wasted GPU-hours", lambda w: f"{w.wasted_gpu_hours:.1f}"),
        ("  idle-held", lambda w: f"{w.idle_held_gpu_hours:.1f}"),
        ("  partial-start waste", lambda w: f"{w.partial_start_waste_gpu_hours:.1f}"),
        ("  thrown away", lambda w: f"{w.thrown_away_gpu_hours:.1f}"),
        ("restarts / failed", lambda w: f"{w.restarts} / {w.failed}"),
        ("busy GPU-hours", lambda w: f"{w.busy_gpu_hours:.1f}"),
    ]
    names = sorted({w.workload for r in report.policies for w in r.workloads})
    for name in names:
        per_policy = [
            next((w for w in r.workloads if w.workload == name), None) for r in report.policies
        ]
        for i, (label, value) in enumerate(rows):
            cells = ["-" if w is None else str(value(w)) for w in per_policy]
            table.add_row(name if i == 0 else "", label, *cells, end_section=i == len(rows) - 1)
    return table


def run_report(
    setup: SimSetup,
    policies: list[str],
    console: Console | None = None,
    log: tuple[str, Path] | None = None,
) -> tuple[SimReport, list[float]]:
    """Run every policy over ``setup``; returns the report and each run's wall seconds.
    ``log``: (policy, store directory) — that policy's run writes its log there."""
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
                    status=f"t={clock(engine.now_ns)} steps={engine.counters.steps}",
                )

            logged = log is not None and log[0] == policy
            factory = (
                sim_controller_factory(Settings(store=str(log[1]), cluster=None))
                if log is not None and logged
                else controller_factory
            )
            start = time.perf_counter()
            result, engine = run_policy(setup, policy, factory, tick)
            walls.append(time.perf_counter() - start)
            if logged:
                cast(Controller, engine.controller).close()
            tick(engine)
            results.append(result)
            rejected = rejected or engine.embedder.rejected
    return build_report(setup, results, rejected), walls


TRACE_ONLY_DEFAULTS: dict[str, object] = {
    "max_groups": None,
    "compress": 1.0,
    "node_losses": 0,
    "controller_crashes": 0,
    "session_interval": "10s",
}


def check_options(
    trace: str | None,
    trace_options: Mapping[str, object],
    chosen: list[str],
    store: Path | None,
    log_policy: str | None,
) -> None:
    """Refuse an option that would do nothing (never ignore it silently)."""
    if trace is None:
        given = [k for k, v in trace_options.items() if v != TRACE_ONLY_DEFAULTS[k]]
        if given:
            names = ", ".join("--" + k.replace("_", "-") for k in given)
            raise UsageError(f"{names} apply to --trace runs only")
    # "recommended": each group in the mode the rule of ADR 0115 gives it.
    known = (*ALL_POLICIES, RECOMMENDED_POLICY)
    unknown = [p for p in chosen if p not in known]
    if unknown or not chosen:
        raise UsageError(
            f"--policies: unknown {', '.join(unknown) or '(none given)'} "
            f"(choose from {', '.join(known)})"
        )
    if log_policy is not None and store is None:
        raise UsageError("--log-policy needs --store DIR (where the log goes)")
    if store is not None:
        policy = log_policy or DEFAULT_LOG_POLICY
        if policy not in chosen:
            raise UsageError(
                f"--log-policy {policy} is not among the policies run ({', '.join(chosen)})"
            )
        if store.exists() and any(store.iterdir()):
            raise UsageError(f"--store {store} is not empty: a simulated log needs a new one")


DEFAULT_LOG_POLICY = "reserve"


class _TraceArgs(TypedDict):
    """The trace options as given on the command line (checked by `check_options`)."""

    max_groups: int | None
    compress: float
    node_losses: int
    controller_crashes: int
    session_interval: str


def sim(
    ctx: typer.Context,
    source: Annotated[
        Path | None,
        typer.Argument(
            help=f"a sim scenario file, or with --trace the traces folder (default ${TRACES_ENV})"
        ),
    ] = None,
    trace: Annotated[
        str | None, typer.Option(help=f"read SOURCE as a real trace: {'|'.join(TRACE_KINDS)}")
    ] = None,
    seed: Annotated[int, typer.Option(help="the one seed every draw comes from")] = 1,
    policies: Annotated[str, typer.Option(help="comma-separated")] = ",".join(ALL_POLICIES),
    max_groups: Annotated[int | None, typer.Option(help="traces: first N groups")] = None,
    compress: Annotated[float, typer.Option(help="traces: arrivals N times denser")] = 1.0,
    node_losses: Annotated[int, typer.Option(help="traces: node losses to draw")] = 0,
    controller_crashes: Annotated[int, typer.Option(help="traces: controller crashes")] = 0,
    session_interval: Annotated[str, typer.Option(help="traces: session period")] = "10s",
    out: Annotated[
        Path,
        typer.Option(help="folder for report.json, report.png (and with --store cluster.toml)"),
    ] = Path("sim-report"),
    verbose: Annotated[bool, typer.Option(help="controller logs on stderr")] = False,
    allocator: Annotated[
        str, typer.Option(help="in-memory | outside-load (the host's other work and races)")
    ] = "in-memory",
    log_policy: Annotated[
        str | None,
        typer.Option(help=f"with --store: whose run writes its log (default {DEFAULT_LOG_POLICY})"),
    ] = None,
) -> None:
    """Run the real controller on a virtual clock; compare costart's policies with the
    naive baseline and the peers' (Volcano, YuniKorn, Kueue, Slurm EASY).

    With the global ``--store DIR`` (a new directory), one policy's run writes its log
    there, so `costart --store DIR replay ...` and `get`/`describe` open it."""
    configure_logging(level=logging.INFO if verbose else logging.WARNING)
    # Wide enough for every policy side by side (a narrow terminal folds, never cuts).
    console = Console(width=max(Console().width, 200))
    if allocator not in ALLOCATORS:
        raise typer.BadParameter(f"--allocator must be one of {', '.join(ALLOCATORS)}")
    target: Target = ctx.obj or Target()  # run alone (its own app), no global options
    store = target.store_dir
    chosen = [p.strip() for p in policies.split(",") if p.strip()]
    trace_options: _TraceArgs = {
        "max_groups": max_groups,
        "compress": compress,
        "node_losses": node_losses,
        "controller_crashes": controller_crashes,
        "session_interval": session_interval,
    }
    with reported():
        if target.store_url is not None:
            raise UsageError("sim writes its log to a directory: --store DIR")
        check_options(trace, trace_options, chosen, store, log_policy)
        source = _source(source, trace)
    setup, outside = _drawn(source, trace, seed, trace_options)
    if allocator == "outside-load":
        setup = with_outside_load(setup, outside)
    for line in describe_setup(setup):
        console.print(line, highlight=False, markup=False)
    log = None if store is None else (log_policy or DEFAULT_LOG_POLICY, store)
    report, walls = run_report(setup, chosen, console, log)
    console.print(workload_table(report))
    console.print(results_table(report))
    for policy, wall in zip(chosen, walls, strict=True):
        console.print(f"{policy}: {wall:.1f}s wall", highlight=False)
    out.mkdir(parents=True, exist_ok=True)
    (out / "report.json").write_bytes(report_json(report))
    write_plot(report, sum(n.gpu for n in setup.cluster.nodes), out / "report.png")
    console.print(f"wrote {out / 'report.json'} and {out / 'report.png'}")
    if log is not None:
        console.print(
            f"the {log[0]} run's log is in {log[1]} (costart --store {log[1]} replay verify)"
        )
        # The run's cluster as a file: a what-if of the log re-runs it on this cluster.
        cluster = out / "cluster.toml"
        cluster.write_text(cluster_document(setup.cluster))
        console.print(
            f"its cluster is in {cluster} "
            f"(costart --store {log[1]} --cluster {cluster} replay whatif)",
            highlight=False,
        )


def _source(given: Path | None, trace: str | None) -> Path:
    """The scenario file or traces folder: as given, else (a --trace run) the folder
    ``COSTART_TRACES`` names; the full traces are never looked for anywhere else."""
    if given is not None:
        return given
    if trace is None:
        raise UsageError("name the sim scenario file (or a traces folder with --trace)")
    folder = os.environ.get(TRACES_ENV, "")
    if not folder:
        raise UsageError(
            f"name the traces folder or set {TRACES_ENV} (the full traces are not in the "
            "repository; where to get them: tests/data/traces/README.md)"
        )
    return Path(folder)


def _drawn(
    source: Path, trace: str | None, seed: int, trace_options: _TraceArgs
) -> tuple[SimSetup, OutsideLoadDoc | None]:
    """The run's setup drawn from a scenario file or a real trace (``trace_options``,
    already checked), and the scenario's outside load if it declares one. An invalid
    scenario is reported, exit code `EXIT_INVALID`."""
    try:
        if trace is None:
            scenario = load_scenario(source)
            return draw_setup(scenario, seed), scenario.doc.outside_load
        if trace not in TRACE_KINDS:
            raise typer.BadParameter(f"--trace must be one of {', '.join(TRACE_KINDS)}")
        options = TraceOptions(
            max_groups=trace_options["max_groups"],
            compress=trace_options["compress"],
            node_losses=trace_options["node_losses"],
            controller_crashes=trace_options["controller_crashes"],
            session_interval_ns=parse_duration_ns(trace_options["session_interval"]),
        )
        return trace_setup(cast(TraceKind, trace), source, seed, options), None
    except ScenarioError as error:
        typer.echo(f"invalid scenario {source}: {error}", err=True)
        raise typer.Exit(EXIT_INVALID) from None
    except UnreadableFileError as error:
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(EXIT_USAGE) from None
    except OSError as error:  # a trace directory without the trace's files
        where = error.filename or source
        typer.echo(f"error: cannot read trace {where}: {why_unreadable(error)}", err=True)
        raise typer.Exit(EXIT_USAGE) from None


def register(main_app: typer.Typer) -> None:
    """Add ``costart sim`` to the main command line."""
    main_app.command("sim")(sim)


app.command("sim")(sim)
