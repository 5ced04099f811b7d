"""The Controller a server runs, and its lease: taken at start (or, for a standby, once
the leader's lease expires), renewed while serving, given back on a graceful stop.

On a store that keeps a lease (an LMDB directory, ADR 0009, or a PostgreSQL URL, ADR
0010) a server is a leader only while it holds the lease; without ``store`` the log
lives in memory (a demo that forgets everything on exit)."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Protocol

import structlog

from costart.bootstrap import Settings, bootstrap, build_standby
from costart.controller import Controller, PlacementStep
from costart.eventlog.lease_keeper import LeaseKeeper, LeaseLike
from costart.server.errors import LeaseHeldError, OptionError
from costart.server.leadership import Leadership

log = structlog.get_logger("costart.serve")
SECOND_NS = 10**9


class Stoppable(Protocol):
    """What a lost lease stops (the HTTP server: uvicorn's ``should_exit``)."""

    should_exit: bool


def open_controller(
    settings: Settings,
    step: PlacementStep | None,
    standby: bool,
    lease_duration_s: float,
    *,
    check_views: bool,
) -> tuple[Controller, LeaseLike | None, Path]:
    """The controller on the store the settings name (leading it under the store's
    lease, after a standby wait with ``standby``), its lease, and where its views live.
    ``check_views``: refuse a log behind the views before leading (ADR 0048); False when
    they are to be rebuilt (``--rebuild-views``). Raises `LeaseHeldError` when another
    process leads, `OptionError` for a standby without a store that keeps a lease."""
    lease_ns = int(lease_duration_s * SECOND_NS)
    views_dir = settings.views_dir()
    if views_dir is not None:
        if settings.store_dir is not None:
            settings.store_dir.mkdir(parents=True, exist_ok=True)
        controller, lease = _lead(settings, step, standby, lease_ns, check_views=check_views)
        return controller, lease, views_dir
    if standby:
        raise OptionError("--standby needs a store shared with the leader (--store DIR or URL)")
    log.warning("no --store: the log is kept in memory and lost on exit")
    controller = bootstrap(settings, placement=step)
    return controller, None, Path(tempfile.mkdtemp(prefix="costart-views-"))


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
            raise OptionError(str(error)) from None
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
        raise LeaseHeldError(held.holder if held is not None else "?")
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


def keep(lease: LeaseLike, controller: Controller, server: Stoppable) -> LeaseKeeper:
    """Renew the lease; stop serving once it is lost (or the controller stopped)."""

    def check() -> str | None:
        stopped = controller.stopped
        return None if stopped is None else f"the controller stopped: {stopped}"

    def lost(reason: str) -> None:
        server.should_exit = True

    keeper = LeaseKeeper(lease, lost, check)
    keeper.start()
    return keeper


def hand_over(controller: Controller, lease: LeaseLike) -> None:
    """A graceful stop of a leader: snapshot the live state (the successor restores or
    checks against it), then expire the lease so a standby takes over at once."""
    try:
        if controller.stopped is None:
            log.info("snapshot on stop", position=controller.snapshot_now())
    finally:
        lease.release()
        log.info("lease released", epoch=controller.epoch)
