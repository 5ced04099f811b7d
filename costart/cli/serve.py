"""`costart serve`: the flags of the long-running service, parsed and handed to
`costart.server`, which composes and runs it.

Binds 127.0.0.1 unless told otherwise. Logs are JSON lines on stderr (one per request).
Without ``--store`` the log lives in memory (a demo that forgets everything on exit).

On a ``--store`` that keeps a lease (an LMDB directory, ADR 0009, or a PostgreSQL URL,
ADR 0010) the server is a leader only while it holds the store's lease: it takes the
lease at start (failing if another process holds it), renews it, and exits non-zero
once it is lost. ``--standby`` tails the leader's log instead
and promotes itself (lease, controller from its warm state, sessions, REST) when the
leader's lease expires.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, NoReturn

import msgspec
import typer

from costart.bootstrap import build_placement
from costart.cli.commands import Target, is_empty_directory, reaching_store, require_store
from costart.cli.exits import EXIT_ERROR, EXIT_USAGE, Unavailable, UsageError, exit_code
from costart.eventlog.errors import DamagedStoreError, OutOfSpaceError
from costart.files import UnreadableFileError, why_not_writable
from costart.placement import ClusterError
from costart.rest.auth import TokenError, Tokens
from costart.server.errors import LeaseHeldError, OptionError
from costart.server.options import ESTIMATE_DEPTH, ServeOptions, peer_origin
from costart.server.token_reload import log_token_warnings, reload_tokens_on_hangup


def serve(
    ctx: typer.Context,
    tokens: Annotated[Path, typer.Option(help="tokens file (TOML): token -> user, role")],
    host: Annotated[str, typer.Option(help="address to bind")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="port to bind")] = 8080,
    cluster: Annotated[
        Path | None,
        typer.Option(help="cluster file for the placement (default: the global --cluster)"),
    ] = None,
    placement: Annotated[
        str | None, typer.Option(help="placement factory MODULE:FUNCTION (cluster path -> step)")
    ] = None,
    interval: Annotated[float, typer.Option(help="seconds between scheduling sessions")] = 1.0,
    claim_delay: Annotated[
        float, typer.Option(help="simulated claims turn READY after this many seconds")
    ] = 2.0,
    simulate_claims: Annotated[
        bool,
        typer.Option(help="turn claims READY and start members by themselves (laptop demos)"),
    ] = False,
    heartbeat_timeout: Annotated[
        float, typer.Option(help="seconds without an agent's heartbeat before its node is down")
    ] = 30.0,
    cert: Annotated[
        Path | None, typer.Option(help="TLS certificate (PEM): serve HTTPS; needs --key")
    ] = None,
    key: Annotated[Path | None, typer.Option(help="TLS private key (PEM) of --cert")] = None,
    standby: Annotated[
        bool, typer.Option(help="tail the leader's log; take over when its lease expires")
    ] = False,
    lease_duration: Annotated[
        float, typer.Option(help="seconds a leader's lease lasts unless renewed")
    ] = 2.0,
    max_connections: Annotated[
        int, typer.Option(help="open connections (watchers included) before 503s")
    ] = 2048,
    advertise: Annotated[
        str | None,
        typer.Option(help="the URL clients reach this server at (a standby names it)"),
    ] = None,
    estimate_depth: Annotated[
        int,
        typer.Option(
            help="the most waiting groups given an expected start, in queue order (the rest: "
            "beyond the groups planned); planning takes longer the more there are"
        ),
    ] = ESTIMATE_DEPTH,
    peer: Annotated[
        list[str] | None,
        typer.Option(
            help="another server of this store as a browser reaches it, scheme://host:port "
            "(repeat for each): an open board moves there when this server is gone"
        ),
    ] = None,
) -> None:
    """Run the controller: REST API, scheduling sessions, timers, simulated claims."""
    # The web framework loads here, with the server's runtime: the other commands never
    # pay for it (ADR 0063).
    from costart.server.runtime import Server  # noqa: PLC0415

    target: Target = ctx.obj
    settings = msgspec.structs.replace(
        target.settings(), cluster=cluster or target.cluster, placement=placement
    )
    try:
        users = Tokens.from_toml(tokens)
        step = build_placement(settings)
        options = ServeOptions(
            host=host,
            port=port,
            interval_s=interval,
            claim_delay_s=claim_delay,
            simulate_claims=simulate_claims,
            heartbeat_timeout_s=heartbeat_timeout,
            cert=cert,
            key=key,
            standby=standby,
            lease_duration_s=lease_duration,
            max_connections=max_connections,
            advertise=advertise,
            rebuild_views=target.rebuild_views,
            peers=tuple(peer_origin(p) for p in peer or ()),
            estimate_depth=estimate_depth,
        )
    except (TokenError, ClusterError, ValueError, UnreadableFileError) as error:
        # OptionError is a ValueError
        _usage(str(error))
    store = target.store_dir
    if store is not None and store.exists() and not is_empty_directory(store):
        # A new store only in a new or empty directory (ADR 0081): not beside other files.
        try:
            require_store(target)
        except UsageError as error:
            _usage(f"{error}; serve starts a new store only in a new or empty directory")
        read_only = why_not_writable(store)
        if read_only is not None:
            _refuse(
                OSError(
                    f"the store at {store} is read-only ({read_only}): serve writes to it; "
                    "read commands (get, describe, replay) work on it as it is"
                )
            )
    try:
        with reaching_store(target):
            running = Server.open(settings, options, users, step=step)
    except OptionError as error:
        _usage(str(error))
    except (
        DamagedStoreError,
        OutOfSpaceError,
        Unavailable,
        LeaseHeldError,
    ) as error:
        _refuse(error)
    log_token_warnings(users)
    reload_tokens_on_hangup(users)  # SIGHUP reads the tokens file again
    lost = running.run()
    stopped = running.controller.stopped
    if stopped is not None and exit_code(stopped) != EXIT_ERROR:
        # A write failed for a reason with its own exit code (a full disk: 9).
        _refuse(stopped)
    if lost is not None:  # the lease was lost: a successor leads now
        raise typer.Exit(EXIT_ERROR)


def _refuse(error: BaseException) -> NoReturn:
    """Stop before serving: the store cannot be trusted, reached, or has no room, or
    another process leads it."""
    typer.echo(f"error: {error}", err=True)
    raise typer.Exit(exit_code(error))


def _usage(message: str) -> NoReturn:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(EXIT_USAGE)
