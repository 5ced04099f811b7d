"""The `costart` command line (ADR 0006).

Global options say where the controller is: ``--store DIR`` (its store directory; the
views live in ``DIR/views``) or ``--server URL`` with ``--token`` (a `costart serve`).
Exit codes are listed in `costart.cli.exits`.
"""

from __future__ import annotations

import logging
import os
import shutil
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from costart import __version__
from costart.bootstrap import DEMO_CLUSTER, Settings, build_placement, configure_logging_once
from costart.cli import agent_cmd, commands, logs_cmd, replay_cmd, sim_cmd, slurm_cmd, token_cmd
from costart.cli.commands import Target, read_spec_file
from costart.cli.exits import EXIT_INVALID, EXIT_USAGE, reported
from costart.cli.live import run_live
from costart.cli.serve import serve
from costart.cli.sim_demo import run_sim_demo
from costart.cli.walkthrough import run_demo
from costart.domain.errors import SpecError
from costart.domain.spec import SpecFormat, parse_spec_warned
from costart.eventlog.backends import backend_at
from costart.files import UnreadableFileError
from costart.logging_setup import parse_level
from costart.placement import ClusterError

# Shell completion on: `costart --install-completion` (bash, zsh, fish, PowerShell).
app = typer.Typer(no_args_is_help=True, add_completion=True, help="Co-start groups.")
SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"
DEMO_SPEC = SCENARIOS / "rl-post-training.toml"

DEMO_STORE = Path("var/demo-store")
_DEMO_MARK = ".costart-demo"


def _invoked_as() -> str:
    """How the user ran us (``.venv/bin/costart`` from ``make demo``), for hints."""
    argv0 = sys.argv[0] if sys.argv and sys.argv[0].endswith("costart") else "costart"
    return os.path.relpath(argv0) if os.path.isabs(argv0) else argv0


def prepare_demo_store(store: Path) -> None:
    """An empty store for the demo. Only a store the demo made itself is wiped."""
    if store.exists() and any(store.iterdir()):
        if not (store / _DEMO_MARK).exists():
            typer.echo(f"error: {store} is not empty and not a demo store", err=True)
            raise typer.Exit(EXIT_USAGE)
        shutil.rmtree(store)
    store.mkdir(parents=True, exist_ok=True)
    (store / _DEMO_MARK).write_text("made by `costart demo`; it may wipe this directory\n")


# Commands whose stdout a script reads log only warnings; serve logs JSON lines.
QUIET = {
    "submit",
    "get",
    "describe",
    "events",
    "logs",
    "why",
    "cancel",
    "scale",
    "token",
    "replay",
    "snapshot",
    "demo",
    "sim",
    "explain",
}


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"costart {__version__}")
        raise typer.Exit()


@app.callback()
def _setup(
    ctx: typer.Context,
    store: Annotated[
        str | None,
        typer.Option(
            envvar="COSTART_STORE",
            help="the controller's store: a directory, or postgresql://USER:PW@HOST:PORT/DB",
        ),
    ] = None,
    server: Annotated[
        str | None, typer.Option(envvar="COSTART_SERVER", help="URL of a `costart serve`")
    ] = None,
    token: Annotated[
        str | None,
        typer.Option(
            envvar="COSTART_TOKEN",
            help="bearer token for --server (`costart agent` refuses it: see its --token-file)",
        ),
    ] = None,
    ca_file: Annotated[
        Path | None,
        typer.Option(
            envvar="COSTART_CA_FILE", help="verify --server's TLS certificate with this CA"
        ),
    ] = None,
    cluster: Annotated[
        Path,
        typer.Option(
            envvar="COSTART_CLUSTER",
            help="cluster file the placement step (and the feasibility check) works on",
        ),
    ] = DEMO_CLUSTER,
    rebuild_views: Annotated[
        bool,
        typer.Option(
            "--rebuild-views",
            help="rebuild the views from the log as it is, even if it lost its tail",
        ),
    ] = False,
    log_level: Annotated[
        str | None,
        typer.Option(
            envvar="COSTART_LOG_LEVEL",
            help="debug | info | warning | error (default: info for serve, warning for reads)",
        ),
    ] = None,
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_print_version, is_eager=True, help="print the version and exit"
        ),
    ] = False,
) -> None:
    command = ctx.invoked_subcommand
    # Configure once per process (an embedding program or a test may have done it).
    try:
        level = parse_level(log_level) if log_level is not None else None
    except ValueError as error:
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(EXIT_USAGE) from None
    if command in ("serve", "agent", "slurm"):  # daemons: JSON lines for a log collector
        configure_logging_once(json=True, level=level or logging.INFO)
    else:
        quiet = logging.WARNING if command in QUIET else logging.INFO
        configure_logging_once(level=level or quiet)
    store = store or None
    if store is not None:
        try:  # the registry's choice, so a location no backend takes is refused here
            backend_at(store)
        except ValueError as error:
            typer.echo(f"error: {error}", err=True)
            raise typer.Exit(EXIT_USAGE) from None
    ctx.obj = Target(
        store=store,
        server=server,
        token=token,
        cluster=cluster,
        rebuild_views=rebuild_views,
        ca_file=ca_file,
    )


@app.command()
def demo(
    ctx: typer.Context,
    walkthrough: Annotated[
        bool, typer.Option(help="instead: one group step by step, printing every state")
    ] = False,
    spec: Annotated[Path, typer.Option(help="walkthrough: group spec (TOML)")] = DEMO_SPEC,
    live: Annotated[
        bool,
        typer.Option(
            help="instead: serve, one agent per node and an RL group of real processes here"
        ),
    ] = False,
    timeout: Annotated[float, typer.Option(help="live: give up after this many seconds")] = 180,
) -> None:
    """A short simulation of RL post-training runs: costart (atomic, reserve) against
    starting members independently. The reserve run's log goes to ``--store DIR``
    (default ``var/demo-store``, made afresh). ``--live``: real processes instead, on
    this machine (serve, one agent per node, scenarios/live-rl.toml; ADR 0044)."""
    target: Target = ctx.obj
    if live:
        if walkthrough:
            typer.echo("error: --live and --walkthrough are two different demos", err=True)
            raise typer.Exit(EXIT_USAGE)
        raise typer.Exit(run_live(timeout, _invoked_as()))
    if target.store_url is not None:
        typer.echo("error: the demo writes its log to a directory (--store DIR)", err=True)
        raise typer.Exit(EXIT_USAGE)
    store = target.store_dir or DEMO_STORE
    prepare_demo_store(store)
    console = Console(width=max(Console().width, 120))
    # A few snapshots for `replay verify` (unless the environment asks for another interval).
    settings = Settings(
        store=str(store),
        cluster=None,
        env={"COSTART_SNAPSHOT_EVERY": os.environ.get("COSTART_SNAPSHOT_EVERY", "8")},
    )
    if walkthrough:
        run_demo(spec, console, settings)
        group = "grpo-run-42"
    else:
        run_sim_demo(store, store.parent / "demo-report", console)
        group = "grpo-000"
    me = _invoked_as()
    console.print(
        f"The log is in [bold]{store}[/bold]. Try:\n"
        f"  {me} --store {store} get groups -o wide\n"
        f"  {me} --store {store} describe group {group}\n"
        f"  {me} --store {store} replay verify\n"
        f"  {me} --store {store} replay timeline {group} --html timeline.html"
    )


@app.command()
def validate(
    file: Path,
    cluster: Annotated[
        Path | None,
        typer.Option(help="also check that the group can ever fit this cluster file"),
    ] = None,
) -> None:
    """Check a group spec; print the first error with its field path."""
    fmt: SpecFormat = "json" if file.suffix == ".json" else "toml"
    with reported():
        data = read_spec_file(file)
    try:
        step = build_placement(Settings(cluster=cluster)) if cluster is not None else None
    except (ClusterError, ValueError, UnreadableFileError) as error:
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(EXIT_USAGE) from None
    try:
        spec, warnings = parse_spec_warned(data, fmt)
        if step is not None:
            step.check_feasible(spec)
    except SpecError as error:
        typer.echo(f"invalid spec {file}: {error}", err=True)
        raise typer.Exit(EXIT_INVALID) from None
    for warning in warnings:
        typer.echo(f"warning: {warning}", err=True)
    fits = f", fits {cluster}" if cluster is not None else ""
    typer.echo(f"{spec.name}: valid ({len(spec.members)} members{fits})")


@app.command()
def explain(
    field: Annotated[
        str,
        typer.Argument(
            help="a spec field's path, e.g. failure.rules.max_restarts ('.': the top level)"
        ),
    ],
) -> None:
    """Print one spec field's reference: type, default, unit, limit, what it does and the
    error a bad value gets."""
    # Imported here: the command line starts without the reference's modules.
    from costart.cli.explain_cmd import explain_text, resolve, top_level  # noqa: PLC0415

    if field.strip(".") == "":
        typer.echo(top_level())
        return
    found, note = resolve(field)
    if note:
        typer.echo(note, err=True)
    if found is None:
        raise typer.Exit(EXIT_USAGE)
    typer.echo(explain_text(found))


commands.register(app)
app.add_typer(token_cmd.token_app, name="token")
replay_cmd.register(app)
sim_cmd.register(app)
app.command()(serve)
app.command()(agent_cmd.agent)
app.command()(slurm_cmd.slurm)  # imports the adapter when it runs
app.command()(logs_cmd.logs)  # imports its client when it runs


def main() -> None:
    app()


if __name__ == "__main__":
    main()
