"""`costart serve`: the Controller as a long-running service with the REST API.

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

import contextlib
import signal
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, NoReturn

import msgspec
import structlog
import typer

from costart.adapters.simulated_claims import ClaimDriver
from costart.bootstrap import Settings, bootstrap, build_placement, build_standby
from costart.cli.commands import Target, reaching_store
from costart.cli.exits import EXIT_ERROR, EXIT_USAGE, Unavailable, exit_code
from costart.controller import Controller, PlacementStep
from costart.eventlog.errors import DamagedStoreError
from costart.eventlog.lease_keeper import LeaseKeeper, LeaseLike
from costart.placement import ClusterError
from costart.rest.auth import TokenError, Tokens
from costart.server.checked_views import CheckedViews
from costart.server.leadership import Leadership
from costart.server.views_process import ViewsProcess
from costart.store import DATA_FILE, release_mapped_pages
from costart.store.errors import StoreFullError

if TYPE_CHECKING:
    import uvicorn

    from costart.server.web import Fold

log = structlog.get_logger("costart.serve")
SECOND_NS = 10**9
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


def _open_controller(
    settings: Settings,
    step: PlacementStep | None,
    standby: bool,
    lease_duration: float,
    *,
    check_views: bool,
) -> tuple[Controller, LeaseLike | None, Path]:
    """The controller on the store the settings name (leading it under the store's
    lease, after a standby wait with ``--standby``), its lease, and where its views
    live. ``check_views``: refuse a log behind the views before leading (ADR 0048);
    False when they are to be rebuilt (``--rebuild-views``)."""
    lease_ns = int(lease_duration * SECOND_NS)
    views_dir = settings.views_dir()
    if views_dir is not None:
        if settings.store_dir is not None:
            settings.store_dir.mkdir(parents=True, exist_ok=True)
        controller, lease = _lead(settings, step, standby, lease_ns, check_views=check_views)
        return controller, lease, views_dir
    if standby:
        _usage("--standby needs a store shared with the leader (--store DIR or URL)")
    log.warning("no --store: the log is kept in memory and lost on exit")
    controller = bootstrap(settings, placement=step)
    return controller, None, Path(tempfile.mkdtemp(prefix="costart-views-"))


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
) -> None:
    """Run the controller: REST API, scheduling sessions, timers, simulated claims."""
    from costart.server import web  # noqa: PLC0415 - the web framework loads here

    target: Target = ctx.obj
    settings = msgspec.structs.replace(
        target.settings(), cluster=cluster or target.cluster, placement=placement
    )
    try:
        users = Tokens.from_toml(tokens)
        step = build_placement(settings)
    except (TokenError, ClusterError, ValueError) as error:
        _usage(str(error))
    _check_options(lease_duration, interval, heartbeat_timeout, claim_delay, max_connections)
    tls = _tls_files(cert, key)
    url = advertise or f"{'https' if tls else 'http'}://{host}:{port}"
    try:
        with (
            reaching_store(target),
            web.not_leader_while_standby(standby, target.store_dir, host, port, tls),
        ):
            controller, lease, views_dir = _open_controller(
                settings, step, standby, lease_duration, check_views=not target.rebuild_views
            )
    except (DamagedStoreError, StoreFullError, Unavailable) as error:
        _refuse(error)
    if target.store_dir is not None and lease is not None:
        web.publish_leader(target.store_dir, url)
    driver = ClaimDriver(int(claim_delay * SECOND_NS)) if simulate_claims else None
    checked = _checked_views(views_dir, controller, lease, rebuild=target.rebuild_views)
    with contextlib.closing(checked), contextlib.ExitStack() as stack:
        service, hub = web.service(
            controller,
            checked.views,
            driver,
            int(heartbeat_timeout * SECOND_NS),
            _views_fold(stack, settings, checked.views.db.path) if target.store_dir else None,
        )
        _release_startup_pages(checked.views.db.path, target.store_dir)
        server = web.server(service, hub, users, host, port, tls, max_connections)
        keeper = _keep(lease, controller, server) if lease is not None else None
        service.start(interval)
        log.info(
            "serving",
            url=url,
            placement=step is not None,
            epoch=controller.epoch,
        )
        try:
            with _stop_signals_return():
                server.run()
        finally:
            service.close()
            if keeper is not None:
                keeper.stop()
            if lease is not None and keeper is not None and keeper.lost is None:
                _hand_over(controller, lease)
    if keeper is not None and keeper.lost is not None:
        raise typer.Exit(EXIT_ERROR)


def _check_options(
    lease_duration: float,
    interval: float,
    heartbeat_timeout: float,
    claim_delay: float,
    max_connections: int,
) -> None:
    """Refuse a bad option before anything is opened, like a zero timeout in a spec."""
    for option, seconds in (
        ("--lease-duration", lease_duration),
        ("--interval", interval),
        ("--heartbeat-timeout", heartbeat_timeout),
    ):
        if not seconds > 0:  # also NaN
            _usage(f"{option} must be longer than 0 seconds (got {seconds})")
    if not claim_delay >= 0:
        _usage(f"--claim-delay must not be negative (got {claim_delay})")
    if max_connections < 1:
        _usage("--max-connections must be at least 1")


def _checked_views(
    views_dir: Path, controller: Controller, lease: LeaseLike | None, *, rebuild: bool
) -> CheckedViews:
    """The views, every stored value checked once and their anchor against the log
    (rebuilt first with ``rebuild``); a damaged store gives the lease back and refuses."""
    try:
        checked = CheckedViews(
            views_dir,
            lambda: controller,
            rebuild=rebuild,
            warn=lambda message: log.warning("views", problem=message),
        )
        checked.fresh(verify=True)
    except DamagedStoreError as error:
        if lease is not None:
            lease.release()
        _refuse(error)
    return checked


def _views_fold(stack: contextlib.ExitStack, settings: Settings, views_dir: Path) -> Fold:
    """On a store other processes can open, the views fold in a process of their own
    (ADR 0055), stopped when ``stack`` closes (after the service's threads)."""
    folder = ViewsProcess(settings.controller_env(), views_dir)
    return stack.enter_context(contextlib.closing(folder)).catch_up


def _release_startup_pages(*data_dirs: Path | None) -> None:
    """The startup checks read the views and the log whole once: those pages need not
    stay resident (ADR 0050)."""
    for data_dir in data_dirs:
        if data_dir is not None:
            release_mapped_pages(data_dir / DATA_FILE)


@contextmanager
def _stop_signals_return() -> Iterator[None]:
    """uvicorn shuts down on SIGTERM/SIGINT and then raises the signal again under the
    handler it found. A handler that ignores it lets the stop return here, so a leader
    hands over (snapshot, lease release) before the process exits."""
    previous = {sig: signal.signal(sig, lambda *_: None) for sig in STOP_SIGNALS}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _refuse(error: BaseException) -> NoReturn:
    """Stop before serving: the store cannot be trusted, reached, or has no room."""
    typer.echo(f"error: {error}", err=True)
    raise typer.Exit(exit_code(error))


def _tls_files(cert: Path | None, key: Path | None) -> tuple[Path, Path] | None:
    """Both or neither; each must be a readable file (checked before anything starts)."""
    if cert is None and key is None:
        return None
    if cert is None or key is None:
        _usage("--cert and --key go together")
    for option, path in (("--cert", cert), ("--key", key)):
        if not path.is_file():
            _usage(f"{option} {path}: no such file")
    return cert, key


def _usage(message: str) -> NoReturn:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(EXIT_USAGE)


def _lead(
    settings: Settings,
    step: PlacementStep | None,
    standby: bool,
    lease_ns: int,
    *,
    check_views: bool,
) -> tuple[Controller, LeaseLike | None]:
    """The controller of this process, and the lease it writes under (None when the
    store keeps no lease, e.g. SQLite). A standby returns only once promoted."""
    env = settings.controller_env()
    try:
        leadership = Leadership(env, lease_ns)
    except ValueError as error:
        if standby:
            _usage(str(error))
        return bootstrap(settings, placement=step, env=env, check_views=check_views), None
    lease = leadership.lease
    if standby:
        warm = build_standby(settings, leadership.factory, lease, check_views=check_views)
        epoch = warm.wait_for_lease()
        assert epoch is not None  # no stop event: waits until it holds the lease
        controller = bootstrap(
            settings,
            placement=step,
            env=leadership.fenced(epoch),
            epoch=leadership.writer_epoch(epoch),
            warm=warm.world,
            check_views=False,  # the standby checked them before it started tailing
        )
        log.info("promoted", epoch=epoch, position=controller.world.position)
        return controller, lease
    epoch = lease.try_acquire()
    if epoch is None:
        held = lease.read()
        holder = held.holder if held is not None else "?"
        typer.echo(
            f"error: the store's lease is held by {holder}; start this one with --standby",
            err=True,
        )
        raise typer.Exit(EXIT_ERROR)
    log.info("lease acquired", epoch=epoch, holder=lease.holder)
    try:
        controller = bootstrap(
            settings,
            placement=step,
            env=leadership.fenced(epoch),
            epoch=leadership.writer_epoch(epoch),
            check_views=check_views,
        )
    except BaseException:
        lease.release()  # a store that cannot be restored is not led
        raise
    log.info("leading", epoch=epoch, position=controller.world.position)
    return controller, lease


def _keep(lease: LeaseLike, controller: Controller, server: uvicorn.Server) -> LeaseKeeper:
    """Renew the lease; stop serving once it is lost (or the controller stopped)."""

    def check() -> str | None:
        stopped = controller.stopped
        return None if stopped is None else f"the controller stopped: {stopped}"

    def lost(reason: str) -> None:
        server.should_exit = True

    keeper = LeaseKeeper(lease, lost, check)
    keeper.start()
    return keeper


def _hand_over(controller: Controller, lease: LeaseLike) -> None:
    """A graceful stop of a leader: snapshot the live state (the successor restores or
    checks against it), then expire the lease so a standby takes over at once."""
    try:
        if controller.stopped is None:
            log.info("snapshot on stop", position=controller.snapshot_now())
    finally:
        lease.release()
        log.info("lease released", epoch=controller.epoch)
