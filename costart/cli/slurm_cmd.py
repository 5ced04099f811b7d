"""`costart slurm --server URL --node NAME ...`: costart's groups run as Slurm jobs
(`costart.adapters.slurm`, ADR 0096). Its token in ``--token-file PATH`` or
``COSTART_AGENT_TOKEN`` (never argv), an agent token for the Slurm nodes it fronts.

`costart slurm cluster-file`: the cluster file for `costart serve`, written from
Slurm's own listing of its nodes (ADR 0120)."""

from __future__ import annotations

import logging
import re
import signal
import threading
from pathlib import Path
from typing import Annotated

import typer

from costart.cli.commands import Target
from costart.cli.exits import EXIT_ERROR, EXIT_USAGE
from costart.domain.limits import LABEL_PATTERN

HELP = (
    "Run the tasks costart places on Slurm NODEs as held Slurm jobs, released at the "
    "barrier, with Slurm's job states reported back."
)
slurm_app = typer.Typer(invoke_without_command=True, rich_markup_mode=None, help=HELP)


@slurm_app.callback()
def slurm(
    ctx: typer.Context,
    node: Annotated[
        list[str] | None, typer.Option(help="a Slurm node costart places on (repeat)")
    ] = None,
    state_dir: Annotated[
        Path | None,
        typer.Option(help="where the jobs it submitted are recorded, kept across restarts"),
    ] = None,
    server: Annotated[
        str | None, typer.Option(help="URL of `costart serve` (or leader and standbys)")
    ] = None,
    token_file: Annotated[
        Path | None,
        typer.Option(
            help="a file holding the agent token for NODEs, mode 0600 (else: the "
            "environment variable COSTART_AGENT_TOKEN, scrubbed at start)"
        ),
    ] = None,
    accounts: Annotated[
        Path | None,
        typer.Option(
            help="TOML file mapping group owners to accounts jobs are submitted as "
            "(`sbatch --uid`; without it every task is refused)"
        ),
    ] = None,
    allow_root: Annotated[
        bool, typer.Option(help="let an owner mapped to root run jobs as root")
    ] = False,
    partition: Annotated[
        str | None, typer.Option(help="the Slurm partition jobs are submitted to")
    ] = None,
    output_dir: Annotated[
        Path | None,
        typer.Option(help="where each job's output goes (JOBNAME.out; default: discarded)"),
    ] = None,
    poll: Annotated[float, typer.Option(min=0.1, help="seconds between passes")] = 1.0,
) -> None:
    """Run the tasks costart places on Slurm NODEs as held Slurm jobs, released at the
    barrier, with Slurm's job states reported back (--node and --state-dir needed)."""
    if ctx.invoked_subcommand is not None:
        return
    from costart.adapters import Slurm, SlurmAdapter, SlurmConfig  # noqa: PLC0415
    from costart.agent import Accounts, AccountsError, TokenRefused, agent_token  # noqa: PLC0415
    from costart.rest.client import ApiError, Client  # noqa: PLC0415

    target: Target = ctx.obj
    if not node or state_dir is None:
        typer.echo("error: costart slurm needs --node NAME and --state-dir DIR", err=True)
        raise typer.Exit(EXIT_USAGE)
    urls = server or target.server
    if not urls:
        typer.echo("error: costart slurm needs --server URL", err=True)
        raise typer.Exit(EXIT_USAGE)
    for name in node:
        if not re.fullmatch(LABEL_PATTERN, name):
            typer.echo(f"error: --node {name!r}: not a node name", err=True)
            raise typer.Exit(EXIT_USAGE)
    try:
        table = (
            Accounts.from_toml(accounts, allow_root=allow_root)
            if accounts is not None
            else Accounts({}, allow_root=allow_root)
        )
        secret = agent_token(token_file, on_command_line=bool(target.token))
    except (AccountsError, TokenRefused) as error:
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(EXIT_USAGE) from None
    config = SlurmConfig(
        nodes=tuple(node),
        state_dir=state_dir.resolve(),
        accounts=table,
        partition=partition,
        output_dir=output_dir.resolve() if output_dir else None,
        poll_s=poll,
    )
    logging.getLogger("httpx").setLevel(logging.WARNING)
    stopping = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stopping.set())
    servers = tuple(u.strip() for u in urls.split(",") if u.strip())
    try:
        SlurmAdapter(config, Client(servers, secret, ca_file=target.ca_file), Slurm()).run(stopping)
    except (ApiError, ValueError) as error:
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(EXIT_ERROR) from None


@slurm_app.command("cluster-file")
def cluster_file(
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="write it here (default: stdout)")
    ] = None,
    node: Annotated[
        list[str] | None,
        typer.Option(help="only this Slurm node (repeat; default: every node Slurm lists)"),
    ] = None,
) -> None:
    """Write the cluster file for `costart serve` from Slurm's nodes (`scontrol show
    node`): CPUs, memory in whole GB rounded down, GPUs and their type, features and
    partitions as labels; nodes in name order."""
    from costart.adapters import (  # noqa: PLC0415
        Slurm,
        SlurmCommandError,
        SlurmOutputError,
        cluster_toml,
    )

    try:
        listed = Slurm().nodes()
        wanted = set(node or [n.name for n in listed])
        missing = sorted(wanted - {n.name for n in listed})
        if missing:
            raise SlurmOutputError(f"Slurm has no node {missing[0]} (--node)")
        text = cluster_toml(n for n in listed if n.name in wanted)
    except (SlurmCommandError, SlurmOutputError) as error:
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(EXIT_ERROR) from None
    if output is None:
        typer.echo(text, nl=False)
        return
    partial = output.with_name(output.name + ".partial")
    partial.write_text(text, encoding="utf-8")
    partial.replace(output)  # whole or not at all: serve never reads half a file
