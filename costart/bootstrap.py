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

import importlib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Final, cast

from eventsourcing.persistence import InfrastructureFactory

from costart.controller import Clock, Controller, PlacementStep
from costart.domain.world import World
from costart.eventlog.lease_keeper import LeaseLike
from costart.eventlog.rollback import Expectations, LastKnown
from costart.eventlog.standby import Standby
from costart.log_session import LogSession
from costart.logging_setup import configure_logging_once, library_logger
from costart.projections import ViewDamagedError, stored_anchor
from costart.settings import DEMO_CLUSTER, Settings
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

# The placement step unless `placement` names another factory (``MODULE:FUNCTION`` taking
# the cluster file path and returning a `PlacementStep`): the incremental step, which
# decides as the plain `costart.placement:from_cluster_file` one, faster (ADR 0052).
DEFAULT_PLACEMENT: Final = "costart.placement.incremental:from_cluster_file"

PlacementFactory = Callable[[Path | None], PlacementStep]


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
