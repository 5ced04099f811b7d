"""`costart agent --server URL[,URL...] --node NAME [--node NAME ...]`, its token in
``--token-file PATH`` or ``COSTART_AGENT_TOKEN`` (never argv: docs/design.md §11)."""

from __future__ import annotations

import logging
import re
import signal
import threading
from pathlib import Path
from typing import Annotated

import typer

from costart.cli.completion import complete_node
from costart.cli.exits import EXIT_ERROR, EXIT_USAGE
from costart.cli.target import Target
from costart.domain.limits import ENV_NAME_PATTERN, LABEL_PATTERN


def _peer_hosts(values: list[str]) -> tuple[dict[str, str], str | None]:
    named: dict[str, str] = {}
    default = None
    for value in values:
        node, sep, host = value.rpartition("=")
        if not host or (sep and not node):
            raise typer.BadParameter(
                f"{value!r}: expected HOST or NODE=HOST", param_hint="--peer-host"
            )
        if sep:
            named[node] = host
        else:
            default = host
    return named, default


def agent(
    ctx: typer.Context,
    node: Annotated[
        list[str],
        typer.Option(
            help="a node this agent runs (repeat for several)", autocompletion=complete_node
        ),
    ],
    server: Annotated[
        str | None,
        typer.Option(help="URL of `costart serve`, or a comma-separated leader and standbys"),
    ] = None,
    token_file: Annotated[
        Path | None,
        typer.Option(
            help="a file holding the agent's bearer token, mode 0600 (else: the environment "
            "variable COSTART_AGENT_TOKEN, scrubbed at start)"
        ),
    ] = None,
    token: Annotated[
        str | None, typer.Option(hidden=True, help="refused: argv is readable by everyone")
    ] = None,
    work_dir: Annotated[
        Path, typer.Option(help="where tasks run and relative log_dir/cwd paths start")
    ] = Path("."),
    state_dir: Annotated[
        Path | None,
        typer.Option(
            help="what the agent launched, kept across its restarts; its own, outside "
            "WORK_DIR (default: /var/lib/costart-agent/NODES as root, else "
            "$XDG_STATE_HOME/costart-agent/NODES)"
        ),
    ] = None,
    peer_host: Annotated[
        list[str] | None,
        typer.Option(help="HOST or NODE=HOST: where peers reach a node (default: its name)"),
    ] = None,
    resync: Annotated[float, typer.Option(min=0.05, help="seconds between full passes")] = 2.0,
    heartbeat: Annotated[
        float, typer.Option(min=0.1, help="seconds between node heartbeats")
    ] = 5.0,
    failover: Annotated[
        float,
        typer.Option(min=0.0, help="seconds to keep looking for a leader before a call fails"),
    ] = 30.0,
    cgroup_root: Annotated[
        Path | None,
        typer.Option(help="a delegated cgroup v2 directory: per-task cgroups, OOM kills read"),
    ] = None,
    accounts: Annotated[
        Path | None,
        typer.Option(
            help="TOML file mapping group owners to OS accounts (without it, every task "
            "is refused: no owner has an account on this node)"
        ),
    ] = None,
    allow_root: Annotated[
        bool, typer.Option(help="let an owner mapped to root run tasks as root")
    ] = False,
    secrets_dir: Annotated[
        Path | None,
        typer.Option(help="where secrets are read: DIR/OWNER/REFERENCE, one value per file"),
    ] = None,
    allow_env: Annotated[
        list[str] | None,
        typer.Option(
            help="a name that changes how programs load (PATH, LD_PRELOAD, ...) that run "
            "tables may set on shared accounts all the same (repeat for several)"
        ),
    ] = None,
    probe_allow: Annotated[
        list[str] | None,
        typer.Option(
            help="CIDR:PORT, CIDR:LOW-HIGH or CIDR:* ([CIDR]:PORT for IPv6): where http and "
            "tcp probes may connect besides their group's member addresses (repeat for "
            "several; link-local and cloud metadata addresses never)"
        ),
    ] = None,
) -> None:
    """Run the tasks placed on NODEs as local processes (the member's run table)."""
    # The agent and its HTTP client load when this command runs, not for every command.
    from costart.agent import (  # noqa: PLC0415 - see above
        Accounts,
        AccountsError,
        Agent,
        AgentConfig,
        SecretsError,
        StateDirRefused,
        TokenRefused,
        agent_token,
        default_state_dir,
        parse_allow_rules,
        prepare_state_dir,
    )
    from costart.rest.client import ApiError  # noqa: PLC0415 - see above

    target: Target = ctx.obj
    urls = server or target.server
    if not urls:
        typer.echo("error: costart agent needs --server URL", err=True)
        raise typer.Exit(EXIT_USAGE)
    for name in node:
        if not re.fullmatch(LABEL_PATTERN, name):
            typer.echo(f"error: --node {name!r}: not a node name", err=True)
            raise typer.Exit(EXIT_USAGE)
    named, default = _peer_hosts(peer_host or [])
    work = work_dir.resolve()
    try:
        table = (
            Accounts.from_toml(accounts, allow_root=allow_root)
            if accounts is not None
            else Accounts({}, allow_root=allow_root)
        )
    except AccountsError as error:
        typer.echo(f"error: --accounts: {error}", err=True)
        raise typer.Exit(EXIT_USAGE) from None
    for name in allow_env or []:
        if not re.fullmatch(ENV_NAME_PATTERN, name):
            typer.echo(f"error: --allow-env {name!r}: not a variable name", err=True)
            raise typer.Exit(EXIT_USAGE)
    try:
        allow = parse_allow_rules(probe_allow or [])
    except ValueError as error:
        typer.echo(f"error: --probe-allow {error}", err=True)
        raise typer.Exit(EXIT_USAGE) from None
    try:
        secret = agent_token(token_file, on_command_line=token is not None or bool(target.token))
        state = prepare_state_dir(state_dir or default_state_dir(node), work)
    except (TokenRefused, StateDirRefused) as error:
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(EXIT_USAGE) from None
    config = AgentConfig(
        servers=tuple(u.strip() for u in urls.split(",") if u.strip()),
        token=secret,
        nodes=tuple(node),
        work_dir=work,
        state_dir=state,
        peer_hosts=named,
        default_host=default,
        resync_s=resync,
        heartbeat_s=heartbeat,
        failover_s=failover,
        ca_file=target.ca_file,
        cgroup_root=cgroup_root,
        accounts=table,
        secrets_dir=secrets_dir.resolve() if secrets_dir is not None else None,
        allowed_env=frozenset(allow_env or ()),
        probe_allow=allow,
    )
    # One line per request is the server's to log; the agent logs what it decides.
    logging.getLogger("httpx").setLevel(logging.WARNING)
    stopping = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stopping.set())
    try:
        agent_ = Agent(config)
    except SecretsError as error:
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(EXIT_USAGE) from None
    try:
        agent_.run(stopping)
    except (ApiError, ValueError) as error:
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(EXIT_ERROR) from None
