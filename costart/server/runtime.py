"""`Server`: the service composed and run from `Settings` and `ServeOptions` -- the
Controller (leading its store, or standing by for it), the views checked against the
log and folded in their own process, the service layer, the web app, the lease kept
while serving and handed over on a graceful stop.

A host runs it without a command line::

    server = Server.open(settings, ServeOptions(port=8080), users)
    lost = server.run()  # until SIGTERM/SIGINT or `stop()`; why the lease was lost, if it was

This module imports the web framework (`costart.server.web`); `costart.server` resolves
`Server` on first use, so the CLI's other commands never load it (ADR 0063).
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Final, cast

import structlog
import uvicorn

from costart.adapters.simulated_claims import ClaimDriver
from costart.bootstrap import Settings, build_placement
from costart.controller import Controller, PlacementStep
from costart.eventlog.errors import DamagedStoreError
from costart.eventlog.lease_keeper import LeaseLike
from costart.projections import Views
from costart.rest.auth import Tokens
from costart.server import web
from costart.server.checked_views import CheckedViews
from costart.server.leading import SECOND_NS, hand_over, keep, open_controller
from costart.server.options import ServeOptions
from costart.server.views_process import ViewsProcess

log = structlog.get_logger("costart.serve")
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)
BUILD_FROM_SETTINGS: Final = object()
"""`Server.open`'s default step: the one the settings name (`build_placement`)."""


class Server:
    """One service over one store. `open` leads (or stands by, then leads) and checks
    the views; `run` serves until stopped and gives everything back; `stop` asks a
    running server to stop, from any thread. An opened server holds the store's lease
    until `run` returns: after `stop`, `run` serves nothing and hands over at once."""

    def __init__(
        self,
        settings: Settings,
        options: ServeOptions,
        users: Tokens,
        step: PlacementStep | None,
        controller: Controller,
        lease: LeaseLike | None,
        checked: CheckedViews,
    ) -> None:
        """Use `open`, which makes these."""
        self.settings = settings
        self.options = options
        self.users = users
        self.step = step
        self.controller = controller
        self.lease = lease
        self.checked = checked
        self._stop_asked = threading.Event()
        self._http: uvicorn.Server | None = None

    @classmethod
    def open(
        cls,
        settings: Settings,
        options: ServeOptions,
        users: Tokens,
        *,
        step: PlacementStep | object | None = BUILD_FROM_SETTINGS,
    ) -> Server:
        """Lead the store the settings name (a standby first waits for the leader's
        lease, its port answering "not leader" meanwhile) and check the views against
        the log. ``step``: the placement step (default: the one the settings name).

        Raises before serving: `OptionError`, `LeaseHeldError`, `DamagedStoreError` (a
        log or views that cannot be trusted; the lease is given back),
        `OutOfSpaceError`, the store's `StoreUnreachableError`."""
        placement = (
            build_placement(settings)
            if step is BUILD_FROM_SETTINGS
            else cast(PlacementStep | None, step)
        )
        store_dir = settings.store_dir
        with web.not_leader_while_standby(
            options.standby, store_dir, options.host, options.port, options.tls
        ):
            controller, lease, views_dir = open_controller(
                settings,
                placement,
                options.standby,
                options.lease_duration_s,
                check_views=not options.rebuild_views,
            )
        if store_dir is not None and lease is not None:
            web.publish_leader(store_dir, options.url)
        checked = _checked_views(views_dir, controller, lease, rebuild=options.rebuild_views)
        return cls(settings, options, users, placement, controller, lease, checked)

    def run(self) -> str | None:
        """Serve until SIGTERM/SIGINT (on the main thread) or `stop`; then stop the
        service, hand the lease over and close the views. Returns None after a graceful
        stop, else why the lease was lost (the successor leads now)."""
        options, controller, lease = self.options, self.controller, self.lease
        store_dir = self.settings.store_dir
        driver = (
            ClaimDriver(int(options.claim_delay_s * SECOND_NS)) if options.simulate_claims else None
        )
        checked = self.checked
        with contextlib.closing(checked), contextlib.ExitStack() as stack:
            service, hub = web.service(
                controller,
                checked.views,
                driver,
                int(options.heartbeat_timeout_s * SECOND_NS),
                _views_fold(stack, self.settings, checked.views.db.path) if store_dir else None,
                estimate_depth=options.estimate_depth,
            )
            _release_startup_pages(self.settings, checked.views)
            http = web.server(
                service,
                hub,
                self.users,
                options.host,
                options.port,
                options.tls,
                options.max_connections,
                options.peers,
            )
            self._http = http
            keeper = keep(lease, controller, http) if lease is not None else None
            service.start(options.interval_s)
            log.info(
                "serving",
                url=options.url,
                placement=self.step is not None,
                epoch=controller.epoch,
            )
            try:
                if not self._stop_asked.is_set():
                    with _stop_signals_return():
                        http.run()
            finally:
                service.close()
                if keeper is not None:
                    keeper.stop()
                if lease is not None and keeper is not None and keeper.lost is None:
                    hand_over(controller, lease)
        return keeper.lost if keeper is not None else None

    def stop(self) -> None:
        """Ask the server to stop serving (`run` then returns); safe from any thread,
        before or while it runs."""
        self._stop_asked.set()
        if self._http is not None:
            self._http.should_exit = True


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
    except DamagedStoreError:
        if lease is not None:
            lease.release()
        raise
    return checked


def _views_fold(stack: contextlib.ExitStack, settings: Settings, views_dir: Path) -> web.Fold:
    """On a store other processes can open, the views fold in a process of their own
    (ADR 0055), stopped when ``stack`` closes (after the service's threads)."""
    folder = ViewsProcess(settings.controller_env(), views_dir)
    return stack.enter_context(contextlib.closing(folder)).catch_up


def _release_startup_pages(settings: Settings, views: Views) -> None:
    """The startup checks read the views and the log whole once: those pages need not
    stay resident (ADR 0050). The log's backend knows whether its log is mapped."""
    views.db.release_mapped_pages()
    backend, location = settings.store_backend, settings.store
    if backend is not None and location is not None:
        backend.release_mapped_pages(location)


@contextmanager
def _stop_signals_return() -> Iterator[None]:
    """uvicorn shuts down on SIGTERM/SIGINT and then raises the signal again under the
    handler it found. A handler that ignores it lets the stop return here, so a leader
    hands over (snapshot, lease release) before the process exits. Signals reach only
    the main thread: a server run in another thread is stopped with `Server.stop`."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.signal(sig, lambda *_: None) for sig in STOP_SIGNALS}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
