"""The web half of `costart serve`: the service with its watch stream, the HTTP server
over them, and a standby's "not leader" answer. Its own module so the web framework
(Litestar, uvicorn: most of the command line's start-up time) loads when `serve` runs,
not for every command."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import uvicorn

from costart.adapters.simulated_claims import ClaimDriver
from costart.board.routes import BOARD_ROUTES
from costart.controller import Controller
from costart.projections import Views
from costart.rest.auth import Tokens
from costart.rest.http_app import create_app
from costart.rest.not_leader import not_leader_app, publish_leader, read_leader
from costart.rest.watch import WatchHub
from costart.service.controller_service import Service
from costart.service.start_estimates import EstimateSettings, StartEstimator

__all__ = ["not_leader_while_standby", "publish_leader", "server", "service"]

Fold = Callable[[], int]
"""Folds what the log gained into the views; returns the position reached."""


def service(
    controller: Controller,
    views: Views,
    driver: ClaimDriver | None,
    heartbeat_timeout_ns: int,
    fold: Fold | None,
    *,
    estimate_depth: int | None = None,
) -> tuple[Service, WatchHub]:
    """The service, with REST's watch stream as its change feed. Built before any command
    runs: the hub's names and its position are one picture. ``fold``: where the views
    fold (`costart.server.views_process`), else in the service's thread;
    ``estimate_depth``: the most waiting groups the expected starts plan (None: the
    planner's default)."""
    hub = WatchHub.following(controller.read_events, controller.world)
    settings = (
        EstimateSettings() if estimate_depth is None else EstimateSettings(depth=estimate_depth)
    )
    estimator = StartEstimator.for_controller(controller, settings=settings)
    if estimator is not None:
        estimator.on_publish = hub.hint  # the board re-reads its waiting groups then
    service = Service(
        controller,
        views,
        watch=hub,
        driver=driver,
        heartbeat_timeout_ns=heartbeat_timeout_ns,
        fold=fold,
        estimator=estimator,
    )
    return service, hub


def server(
    service: Service,
    watch: WatchHub,
    users: Tokens,
    host: str,
    port: int,
    tls: tuple[Path, Path] | None,
    max_connections: int,
    peers: tuple[str, ...] = (),
) -> uvicorn.Server:
    """The HTTP server: the API and the board; ``peers``: the other servers' addresses
    an open board moves to when this one is gone (`costart.board.failover`)."""
    app = create_app(service, users, watch, BOARD_ROUTES)
    app.state.board_peers = peers
    return uvicorn.Server(
        uvicorn.Config(
            app,
            host=host,
            port=port,
            ssl_certfile=tls[0] if tls else None,
            ssl_keyfile=tls[1] if tls else None,
            log_config=None,
            access_log=False,
            http="httptools",  # the C parser and loop (ADR 0050), not the pure-Python ones
            loop="uvloop",
            # Watchers hold their connection open: the limit counts them too.
            limit_concurrency=max_connections,
            timeout_graceful_shutdown=5,
        )
    )


@contextmanager
def not_leader_while_standby(
    standby: bool, store: Path | None, host: str, port: int, tls: tuple[Path, Path] | None
) -> Iterator[None]:
    """While a standby waits for the lease, its port answers 503 "not leader" with the
    leader's published URL (a client follows it) instead of refusing connections."""
    if not standby:
        yield
        return
    app = not_leader_app(lambda: read_leader(store) if store is not None else None)
    server = uvicorn.Server(
        uvicorn.Config(
            app,  # type: ignore[arg-type]
            host=host,
            port=port,
            log_config=None,
            access_log=False,
            ssl_certfile=tls[0] if tls else None,
            ssl_keyfile=tls[1] if tls else None,
        )
    )
    thread = threading.Thread(target=server.run, name="costart-not-leader", daemon=True)
    thread.start()
    try:
        yield
    finally:
        server.should_exit = True
        thread.join(timeout=10)
