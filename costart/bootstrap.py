"""The composition root: the one place that builds a `Controller` (DESIGN §2).

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
from costart.logging_setup import configure_logging
from costart.pgstore import env_for_url, is_url, redact
from costart.projections import ViewDamagedError, stored_anchor
from costart.sim.ports import ControllerFactory, PlacementStepLike, SimController
from costart.store.keeper import LeaseLike
from costart.store.rollback import Expectations, LastKnown
from costart.store.standby import Standby

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
STORE_MODULE: Final = "costart.store"
VIEWS_DIR: Final = "views"
VIEWS_DIR_VARIABLE: Final = "COSTART_VIEWS_DIR"
# The placement step unless `placement` names another factory (``MODULE:FUNCTION`` taking
# the cluster file path and returning a `PlacementStep`).
DEFAULT_PLACEMENT: Final = "costart.placement:from_cluster_file"

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
    def store_url(self) -> str | None:
        """The PostgreSQL URL, when the store is one."""
        return self.store if self.store is not None and is_url(self.store) else None

    @property
    def store_dir(self) -> Path | None:
        """The LMDB directory, when the store is one."""
        return Path(self.store) if self.store is not None and not is_url(self.store) else None

    def controller_env(self) -> dict[str, str]:
        """The controller's environment: the process environment, the store's selection
        (LMDB unless the environment names another module, or PostgreSQL for a URL),
        then ``env``."""
        env = dict(os.environ)
        if self.store_url is not None:
            env.update(env_for_url(self.store_url))
        elif self.store_dir is not None:
            env.setdefault("PERSISTENCE_MODULE", STORE_MODULE)
            env["COSTART_LMDB_PATH"] = str(self.store_dir)
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
        key = hashlib.sha256(redact(self.store_url).encode()).hexdigest()[:16]
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
    ``warm`` and ``restart_of`` are the Controller's HA and crash-restart arguments;
    ``term``, the host's leadership term instead of the lease (ADR 0027).

    A store rolled back behind what is known of it outside is refused with
    `LogTailLostError` before anything is read or written (ADR 0048): ``last_known`` is
    the host's truth (`Controller.last_known`, kept by the host); the store's views, when
    it has some, are checked too unless ``check_views`` is False (a caller that checks
    or rebuilds them itself, holding them open)."""
    step = (
        build_placement(settings) if placement is _UNSET else cast(PlacementStep | None, placement)
    )
    return Controller(
        env=dict(env) if env is not None else settings.controller_env(),
        clock=clock,
        placement=step,
        restart_of=restart_of,
        epoch=epoch,
        warm=warm,
        term=term,
        expect=expectations(settings, last_known, check_views=check_views),
    )


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
            structlog.get_logger("costart.bootstrap").warning(
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
