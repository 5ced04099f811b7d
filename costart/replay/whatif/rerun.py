"""The re-run: a recorded workload through the simulator under changed settings.

The simulator's clock starts where the log's session grid does (`RecordedWorkload.
start_ns`), so with the recorded settings every time of the re-run is the log's own
and the two decision streams compare event for event (ADR 0132). The re-run's log goes
to the store the caller's controller factory writes (a new directory), never the log
read.
"""

from __future__ import annotations

from collections.abc import Callable

import msgspec

from costart.domain.durations import parse_duration_ns
from costart.placement.cluster_file import ClusterDefinition
from costart.replay.whatif.changes import Change, changed_spec
from costart.replay.whatif.options import DEFAULT_TAIL
from costart.replay.whatif.workload import RecordedWorkload
from costart.sim.engine import Engine
from costart.sim.ports import ControllerFactory
from costart.sim.results import PolicyResult, run_policy
from costart.sim.setup import FaultPlan, SimOptions, SimSetup
from costart.sim.workload import Workload

DEFAULT_TAIL_NS = parse_duration_ns(DEFAULT_TAIL)


class WhatIfRun(msgspec.Struct, frozen=True):
    """What one what-if ran, for a report: the recorded log's location, the what-if
    log's directory, the cluster files, the policy, the changed settings and every
    assumption the re-run rests on. ``rejected``: groups the what-if cluster can never
    fit (refused at submission, as costart refuses them); ``inputs_refused``: recorded
    inputs the re-run's controller would not take (a scale change its state forbids)."""

    recorded_log: str
    log: str
    recorded_cluster: str
    cluster: str
    policy: str
    changes: list[str]
    assumptions: list[str]
    first_ns: int
    end_ns: int
    session_interval_ns: int
    start_ns: int
    first_session_ns: int | None
    horizon_ns: int
    rejected: list[str] = msgspec.field(default_factory=list)
    inputs_refused: list[str] = msgspec.field(default_factory=list)


def whatif_setup(
    recorded: RecordedWorkload,
    cluster: ClusterDefinition,
    changes: list[Change],
    tail_ns: int = DEFAULT_TAIL_NS,
) -> tuple[SimSetup, list[str]]:
    """The simulator's setup for a re-run, and the assumptions it adds (node reports
    of nodes the cluster does not have are left out, said so)."""
    said = list(recorded.assumptions)
    arrivals = [
        msgspec.structs.replace(a, spec=changed_spec(a.spec, changes)) if changes else a
        for a in recorded.arrivals
    ]
    names = {node.name for node in cluster.nodes}
    missing = sorted({c.node for c in recorded.node_changes if c.node not in names})
    if missing:
        said.append(
            f"node reports of {', '.join(missing)} are left out: the cluster has no such node"
        )
    changes_kept = tuple(c for c in recorded.node_changes if c.node in names)
    options = SimOptions(
        seed=0,
        session_interval_ns=recorded.session_interval_ns,
        horizon_ns=recorded.end_ns - recorded.start_ns + tail_ns,
        start_ns=recorded.start_ns,
        first_session_ns=recorded.first_session_ns,
    )
    setup = SimSetup(
        name="whatif",
        options=options,
        cluster=cluster,
        workload=Workload(name="whatif", arrivals=arrivals, assumptions=said),
        faults=FaultPlan(node_changes=changes_kept),
    )
    return setup, said


def run_whatif(
    setup: SimSetup,
    policy: str,
    factory: ControllerFactory,
    progress: Callable[[Engine], None] | None = None,
) -> tuple[PolicyResult, Engine]:
    """Run the re-run (``policy``: any the simulator has, `RECORDED_POLICY` for each
    group's own mode); the engine's controller holds the what-if log."""
    return run_policy(setup, policy, factory, progress)
