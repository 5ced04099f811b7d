"""The composition root: the one place that builds a `Controller` and its `LogSession`
(docs/design.md §2).

Every entry point — the CLI (direct and remote), `serve`, `sim`, `demo`, the benchmarks
and the tests that need a whole controller — describes what it wants in `Settings` and
calls `bootstrap`. So they all get the same wiring: the store chosen by configuration
(LMDB directory, PostgreSQL URL, or memory), the placement step built from the cluster
file (hence the same feasibility rule on every way in: a group that can never fit is
refused everywhere), the injected clock, and the views' directory.

Nothing else constructs `Controller` (a test in ``tests/test_bootstrap.py`` holds the
entry points to it).
"""

from __future__ import annotations

import hashlib
import importlib
import logging
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Final, cast

import msgspec
import structlog
from eventsourcing.persistence import InfrastructureFactory

from costart.controller import Clock, Controller, PlacementStep
from costart.domain.world import World
from costart.eventlog.backends import StoreBackend, backend_at
from costart.eventlog.lease_keeper import LeaseLike
from costart.eventlog.rollback import Expectations, LastKnown
from costart.eventlog.standby import Standby
from costart.log_session import LogSession
from costart.logging_setup import configure_logging, library_logger
from costart.projections import ViewDamagedError, stored_anchor
from costart.sim.ports import ControllerFactory, PlacementStepLike, SimController

__all__ = [
    "DEFAULT_PLACEMENT",
    "DEMO_CLUSTER",
    "Settings",
    "bootstrap",
    "build_placement",
    "build_standby",
    "configure_logging_once",
    "sim_controller_factory",
]

DEMO_CLUSTER: Final = Path(__file__).resolve().parents[1] / "scenarios" / "cluster-demo.toml"
VIEWS_DIR: Final = "views"
VIEWS_DIR_VARIABLE: Final = "COSTART_VIEWS_DIR"
# The placement step unless `placement` names another factory (``MODULE:FUNCTION`` taking
# the cluster file path and returning a `PlacementStep`): the incremental step, which
# decides as the plain `costart.placement:from_cluster_file` one, faster (ADR 0052).
DEFAULT_PLACEMENT: Final = "costart.placement.incremental:from_cluster_file"

PlacementFactory = Callable[[Path | None], PlacementStep]


class Settings(msgspec.Struct, frozen=True, kw_only=True):
    """What a controller is built from.

    ``store`` is an LMDB directory or a ``postgresql://`` URL; None keeps the log in
    memory. ``cluster`` is the cluster file the placement step (and so the feasibility
    check) works on; None builds a controller without a step, driven by hand
    (``apply_decisions``) — then nothing can check feasibility, so entry points that
    accept specs from users always give one. ``env`` adds to the controller's
    environment (snapshot interval, durability, ...)."""

    store: str | None = None
    cluster: Path | None = DEMO_CLUSTER
    placement: str | None = None
    env: Mapping[str, str] = msgspec.field(default_factory=dict)

    @property
    def store_backend(self) -> StoreBackend | None:
        """The store backend that takes ``store`` (the registry's choice), None for memory."""
        return backend_at(self.store) if self.store is not None else None

    @property
    def store_url(self) -> str | None:
        """The store's location when it is not a directory (a PostgreSQL URL)."""
        backend = self.store_backend
        return self.store if backend is not None and backend.data_file is None else None

    @property
    def store_dir(self) -> Path | None:
        """The store's directory, when it keeps its log in one (LMDB)."""
        backend = self.store_backend
        keeps_files = backend is not None and backend.data_file is not None
        return Path(self.store) if keeps_files and self.store is not None else None

    def controller_env(self) -> dict[str, str]:
        """The controller's environment: the process environment, the settings that open
        the store (from the backend that takes it), then ``env``."""
        env = dict(os.environ)
        if self.store is not None:
            env = backend_at(self.store).location_env(self.store, env)
        env.update(self.env)
        return env

    def views_dir(self) -> Path | None:
        """Where the views of this store live: ``DIR/views`` for a directory; for a
        PostgreSQL log ``$COSTART_VIEWS_DIR``, else a per-log directory in the user's cache
        (views are a local, rebuildable cache); None for a log in memory."""
        if self.store_dir is not None:
            return self.store_dir / VIEWS_DIR
        if self.store_url is None:
            return None
        configured = os.environ.get(VIEWS_DIR_VARIABLE)
        if configured:
            return Path(configured)
        cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
        shown = backend_at(self.store_url).describe(self.store_url)  # no password
        key = hashlib.sha256(shown.encode()).hexdigest()[:16]
        return cache / "costart" / f"views-{key}"


def build_placement(settings: Settings) -> PlacementStep | None:
    """The placement step the settings name: ``settings.placement`` (``MODULE:FUNCTION``,
    default `DEFAULT_PLACEMENT`) applied to ``settings.cluster``; None without a cluster.
    Raises ValueError for a factory that cannot be loaded and `ClusterError` for a bad
    cluster file."""
    if settings.cluster is None and settings.placement is None:
        return None
    module_name, _, attr = (settings.placement or DEFAULT_PLACEMENT).partition(":")
    try:
        factory: PlacementFactory = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as error:
        raise ValueError(
            f"cannot load placement factory {settings.placement!r}: {error}"
        ) from error
    return factory(settings.cluster)


_UNSET: Final = object()


def bootstrap(
    settings: Settings,
    *,
    clock: Clock | None = None,
    placement: PlacementStep | object | None = _UNSET,
    env: Mapping[str, str] | None = None,
    epoch: int | None = None,
    warm: World | None = None,
    restart_of: Controller | None = None,
    term: int | None = None,
    last_known: LastKnown | None = None,
    check_views: bool = True,
) -> Controller:
    """Build the Controller the settings describe.

    ``placement`` overrides the step built from the settings (the simulator brings its
    own over the simulated cluster; None for none). ``env`` replaces the environment
    derived from the settings (a leader's environment fenced at its epoch). ``epoch``,
    ``warm`` and ``restart_of`` are the log session's HA and crash-restart arguments
    (`LogSession`); ``term``, the host's leadership term instead of the lease (ADR 0027).

    A store rolled back behind what is known of it outside is refused with
    `LogTailLostError` before anything is read or written (ADR 0048): ``last_known`` is
    the host's truth (`Controller.last_known`, kept by the host); the store's views, when
    it has some, are checked too unless ``check_views`` is False (a caller that checks
    or rebuilds them itself, holding them open)."""
    step = (
        build_placement(settings) if placement is _UNSET else cast(PlacementStep | None, placement)
    )
    session = LogSession(
        dict(env) if env is not None else settings.controller_env(),
        restart_of=restart_of.session if restart_of is not None else None,
        epoch=epoch,
        warm=warm,
        term=term,
        expect=expectations(settings, last_known, check_views=check_views),
    )
    return Controller(clock=clock, placement=step, session=session)


def expectations(
    settings: Settings, last_known: LastKnown | None, *, check_views: bool = True
) -> Expectations | None:
    """What is known of the settings' log outside it: ``last_known`` and the anchor of
    its views. Views that cannot be read are not evidence (they are rebuilt from the log
    when next opened, ADR 0028): a warning says they were not checked."""
    views = None
    views_dir = settings.views_dir() if check_views else None
    if views_dir is not None:
        try:
            views = stored_anchor(views_dir)
        except ViewDamagedError as error:
            library_logger("costart.bootstrap").warning(
                "views not checked against the log", views=str(views_dir), problem=str(error)
            )
    if views is None and last_known is None:
        return None
    return Expectations(last_known=last_known, views=views)


def build_standby(
    settings: Settings,
    factory: InfrastructureFactory[Any],
    lease: LeaseLike,
    *,
    last_known: LastKnown | None = None,
    check_views: bool = True,
    poll_s: float | None = None,
) -> Standby:
    """A warm standby of the settings' log (``factory`` opens it, ``lease`` is its
    lease), checked first against what is known of the log outside it, as `bootstrap`
    checks a Controller."""
    expect = expectations(settings, last_known, check_views=check_views)
    if poll_s is None:
        return Standby(factory, lease, expect=expect)
    return Standby(factory, lease, poll_s=poll_s, expect=expect)


def sim_controller_factory(settings: Settings | None = None) -> ControllerFactory:
    """The simulator's way to build (and, after a simulated crash, rebuild) the real
    Controller: the engine brings the clock, the placement step over its simulated
    cluster and its environment; ``settings`` may add a store (the demo keeps one run's
    log) and environment."""
    base = settings or Settings(cluster=None)

    def build(
        *,
        placement: PlacementStepLike,
        clock: Clock,
        env: Mapping[str, str],
        restart_of: SimController | None,
    ) -> SimController:
        merged = {**env, **(base.controller_env() if base.store is not None else base.env)}
        return bootstrap(
            base,
            clock=clock,
            placement=placement,
            env=merged,
            restart_of=cast(Controller | None, restart_of),
        )

    return build


def configure_logging_once(*, json: bool = False, level: int = logging.INFO) -> None:
    """Configure structlog for the process unless an embedding program (or a test) did."""
    if not structlog.is_configured():
        configure_logging(json=json, level=level)
