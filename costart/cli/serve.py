"""`costart serve`: the Controller as a long-running service with the REST API.

Binds 127.0.0.1 unless told otherwise. Logs are JSON lines on stderr (one per request).
Without ``--store`` the log lives in memory (a demo that forgets everything on exit).
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Annotated

import structlog
import typer
import uvicorn

from costart.app import Controller
from costart.cli.backend import VIEWS_DIR, store_env, url_env, views_dir_for_url
from costart.cli.commands import Target
from costart.cli.exits import EXIT_USAGE
from costart.placement import ClusterError
from costart.projections import Views
from costart.rest.app import create_app
from costart.rest.auth import TokenError, Tokens
from costart.rest.claims import ClaimDriver
from costart.rest.service import Service, load_placement

log = structlog.get_logger("costart.serve")
SECOND_NS = 10**9
DEMO_CLUSTER = Path(__file__).resolve().parents[2] / "scenarios" / "cluster-demo.toml"


def serve(
    ctx: typer.Context,
    tokens: Annotated[Path, typer.Option(help="tokens file (TOML): token -> user, role")],
    host: Annotated[str, typer.Option(help="address to bind")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="port to bind")] = 8080,
    cluster: Annotated[
        Path | None, typer.Option(help="cluster file for the placement")
    ] = DEMO_CLUSTER,
    placement: Annotated[
        str | None, typer.Option(help="placement factory MODULE:FUNCTION (cluster path -> step)")
    ] = None,
    interval: Annotated[float, typer.Option(help="seconds between scheduling sessions")] = 1.0,
    claim_delay: Annotated[
        float, typer.Option(help="simulated claims turn READY after this many seconds")
    ] = 2.0,
    simulate_claims: Annotated[
        bool, typer.Option(help="run the simulated claim driver (laptop demos)")
    ] = True,
) -> None:
    """Run the controller: REST API, scheduling sessions, timers, simulated claims."""
    target: Target = ctx.obj
    try:
        users = Tokens.from_toml(tokens)
        step = load_placement(placement, cluster)
    except (TokenError, ClusterError, ValueError) as error:
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(EXIT_USAGE) from None
    if target.url is not None:
        controller = Controller(env=url_env(target.url), placement=step)
        views_dir = views_dir_for_url(target.url)
    elif target.store is not None:
        target.store.mkdir(parents=True, exist_ok=True)
        controller = Controller(env=store_env(target.store), placement=step)
        views_dir = target.store / VIEWS_DIR
    else:
        log.warning("no --store: the log is kept in memory and lost on exit")
        controller = Controller(placement=step)
        views_dir = Path(tempfile.mkdtemp(prefix="costart-views-"))
    driver = ClaimDriver(int(claim_delay * SECOND_NS)) if simulate_claims else None
    with Views(views_dir) as views:
        service = Service(controller, views, driver=driver)
        service.start(interval)
        log.info("serving", url=f"http://{host}:{port}", placement=step is not None)
        try:
            uvicorn.run(
                create_app(service, users),
                host=host,
                port=port,
                log_config=None,
                access_log=False,
                limit_concurrency=64,
                timeout_graceful_shutdown=5,
            )
        finally:
            service.stop()
