"""The `costart` command line (ADR 0006).

Global options say where the controller is: ``--store DIR`` (its store directory; the
views live in ``DIR/views``) or ``--server URL`` with ``--token`` (a `costart serve`);
they go before or after the command. Exit codes are listed in `costart.cli.exits`.

Every command loads when it runs (ADR 0078): this module imports nothing of the store,
the simulator, the agent or the server; `COMMANDS` names the module of each command.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Annotated, Final

import typer

from costart import __version__
from costart.cli import plain_params
from costart.cli.exits import EXIT_USAGE
from costart.cli.lazy_group import LazyCommand, LazyGroup
from costart.cli.target import Target
from costart.settings import DEMO_CLUSTER

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"
DEMO_SPEC = SCENARIOS / "rl-post-training.toml"

_READS: Final = "costart.cli.commands"
COMMANDS: Final = {
    "demo": LazyCommand(
        "costart.cli.demo_cmd:demo",
        "A short simulation of RL post-training runs: costart (atomic, reserve) against "
        "starting members independently.",
    ),
    "validate": LazyCommand(
        "costart.cli.validate_cmd:validate",
        "Check a group spec; print the first error with its field path.",
    ),
    "submit": LazyCommand(
        f"{_READS}:submit", "Submit a group spec (TOML, or JSON by the .json suffix)."
    ),
    "get": LazyCommand(f"{_READS}:get_app", "List groups, members or holds."),
    "describe": LazyCommand(f"{_READS}:describe_app", "Show one object in detail."),
    "events": LazyCommand(
        f"{_READS}:events", "A group's timeline: every event with its controller time."
    ),
    "why": LazyCommand(
        f"{_READS}:why", "Why a group is pending: its current reason and every change."
    ),
    "cancel": LazyCommand(
        f"{_READS}:cancel",
        "Cancel a group: tear down its members and release everything it holds.",
    ),
    "scale": LazyCommand(
        f"{_READS}:scale",
        "Scale a replica set: scale-up places single replicas, scale-down stops the highest.",
    ),
    "token": LazyCommand(
        "costart.cli.token_cmd:token_app", "Make bearer tokens for `costart serve`."
    ),
    "replay": LazyCommand("costart.cli.replay_cmd:replay_app", "Forensics on a log, read-only."),
    "snapshot": LazyCommand(
        "costart.cli.replay_cmd:snapshot",
        "Write a whole-state snapshot of the store's log now (`--store DIR`).",
    ),
    "sim": LazyCommand(
        "costart.cli.sim_cmd:sim",
        "Run the real controller on a virtual clock; compare costart's policies with the "
        "naive baseline and the peers' (Volcano, YuniKorn, Kueue, Slurm EASY).",
    ),
    "serve": LazyCommand(
        "costart.cli.serve:serve",
        "Run the controller: REST API, scheduling sessions, timers, simulated claims.",
    ),
    "agent": LazyCommand(
        "costart.cli.agent_cmd:agent",
        "Run the tasks placed on NODEs as local processes (the member's run table).",
    ),
    "slurm": LazyCommand(
        "costart.cli.slurm_cmd:slurm_app",
        "Run the tasks costart places on Slurm NODEs as held Slurm jobs, released at the "
        "barrier, with Slurm's job states reported back.",
    ),
    "logs": LazyCommand(
        "costart.cli.logs_cmd:logs",
        "Print a task's output, relayed from its node's agent (-f follows restarts).",
    ),
    "explain": LazyCommand(
        "costart.cli.explain_cmd:explain",
        "Print one spec field's reference: type, default, unit, limit, what it does and the "
        "error a bad value gets.",
    ),
}


plain_params.install()  # option values without pydantic where they convert plainly


class CostartGroup(LazyGroup):
    lazy = COMMANDS


# Shell completion on: `costart --install-completion` (bash, zsh, fish, PowerShell).
app = typer.Typer(
    cls=CostartGroup,
    no_args_is_help=True,
    add_completion=True,
    help="Co-start groups. Global options go before or after the command.",
    rich_markup_mode=None,
)

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
# Reads configure logging when they open a store (`Target.log_setup`): over --server
# they log nothing, and never load the logging library.
LOG_ON_OPEN = {"get", "describe", "events", "why"}


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
    from costart.logging_setup import parse_level  # noqa: PLC0415  (light: no structlog)

    command = ctx.invoked_subcommand
    try:
        level = parse_level(log_level) if log_level is not None else None
    except ValueError as error:
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(EXIT_USAGE) from None
    quiet = logging.WARNING if command in QUIET else logging.INFO
    store = store or None
    target = Target(
        store=store,
        server=server,
        token=token,
        cluster=cluster,
        rebuild_views=rebuild_views,
        ca_file=ca_file,
        log_level=level or quiet,
        reads_only=command in LOG_ON_OPEN,
    )
    # Configure once per process (an embedding program or a test may have done it).
    if command in ("serve", "agent", "slurm"):  # daemons: JSON lines for a log collector
        from costart.logging_setup import configure_logging_once  # noqa: PLC0415

        configure_logging_once(json=True, level=level or logging.INFO)
    elif command not in LOG_ON_OPEN or store is not None:
        target.log_setup()
    if store is not None:
        from costart.eventlog.backends import backend_at  # noqa: PLC0415  (a store's cost)

        try:  # the registry's choice, so a location no backend takes is refused here
            backend_at(store)
        except ValueError as error:
            typer.echo(f"error: {error}", err=True)
            raise typer.Exit(EXIT_USAGE) from None
    ctx.obj = target


def main() -> None:
    app()


if __name__ == "__main__":
    main()
