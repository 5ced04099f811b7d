"""A simulation setup from a real trace (PAI 2020 or DLRM 2025), with drawn faults."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Literal

import msgspec

from costart.placement.cluster_file import ClusterDefinition
from costart.sim.distributions import Exp
from costart.sim.scenario import ScenarioError
from costart.sim.setup import ControllerCrash, FaultPlan, NodeLoss, SimOptions, SimSetup
from costart.sim.traces.clusters import compress_arrivals, dlrm_cluster, pai_cluster, with_claims
from costart.sim.traces.dlrm import TRACE_FILE as DLRM_FILE
from costart.sim.traces.dlrm import import_dlrm
from costart.sim.traces.pai import INSTANCE_FILE, JOBS_FILE, MACHINE_FILE, import_pai
from costart.sim.workload import Workload

TraceKind = Literal["pai", "dlrm"]
TRACE_KINDS = ("pai", "dlrm")
# The folder of the full traces (laid out as `tests/data/traces/README.md` describes):
# an optional input of `costart sim --trace` and the benchmarks, never of the tests.
TRACES_ENV = "COSTART_TRACES"
TRACE_FILES: dict[str, tuple[str, ...]] = {
    "pai": (INSTANCE_FILE, JOBS_FILE, MACHINE_FILE),
    "dlrm": (DLRM_FILE,),
}
DAY_NS = 24 * 3600 * 10**9
CLAIM_DELAY = Exp(mean="20s")


class TraceOptions:
    """How to adapt a trace: bound its size, compress its arrivals, add faults."""

    def __init__(
        self,
        *,
        max_groups: int | None = None,
        compress: float = 1.0,
        node_losses: int = 0,
        controller_crashes: int = 0,
        snapshot_every: int = 1000,
        session_interval_ns: int = 10 * 10**9,
        task_skew_ns: int = 10 * 10**9,
        tail_ns: int = 8 * DAY_NS,
    ) -> None:
        self.max_groups = max_groups
        self.compress = compress
        self.node_losses = node_losses
        self.controller_crashes = controller_crashes
        self.snapshot_every = snapshot_every
        self.session_interval_ns = session_interval_ns
        self.task_skew_ns = task_skew_ns
        self.tail_ns = tail_ns


def _rebase(workload: Workload) -> Workload:
    """Start virtual time at the first arrival (trace times have an arbitrary offset)."""
    if not workload.arrivals:
        return workload
    first = workload.arrivals[0].at_ns
    arrivals = [msgspec.structs.replace(a, at_ns=a.at_ns - first) for a in workload.arrivals]
    return msgspec.structs.replace(workload, arrivals=arrivals)


def _faults(rng: random.Random, span_ns: int, options: TraceOptions) -> FaultPlan:
    losses = tuple(
        sorted(
            (
                NodeLoss(int(rng.random() * span_ns), rng.random(), Exp("30m").draw_ns(rng))
                for _ in range(options.node_losses)
            ),
            key=lambda f: f.at_ns,
        )
    )
    crashes = tuple(
        sorted(
            (
                ControllerCrash(int(rng.random() * span_ns))
                for _ in range(options.controller_crashes)
            ),
            key=lambda f: f.at_ns,
        )
    )
    return FaultPlan(losses, crashes)


def check_trace_files(kind: TraceKind, traces: Path) -> None:
    """Refuse a folder that lacks a file the trace needs, naming it (`ScenarioError`)."""
    missing = [name for name in TRACE_FILES[kind] if not (traces / name).is_file()]
    if missing:
        raise ScenarioError(
            "",
            f"{traces} holds no {', '.join(missing)}: name the folder of the full traces "
            f"(or set {TRACES_ENV}); where to get them: tests/data/traces/README.md",
        )


def trace_setup(kind: TraceKind, traces: Path, seed: int, options: TraceOptions) -> SimSetup:
    """Import the trace, build its cluster, and draw the faults from ``seed``."""
    if kind in TRACE_FILES:
        check_trace_files(kind, traces)
    if kind == "pai":
        workload = import_pai(traces, max_groups=options.max_groups)
    elif kind == "dlrm":
        workload = import_dlrm(traces, max_groups=options.max_groups)
    else:
        raise ValueError(f"unknown trace {kind!r} (expected one of {', '.join(TRACE_KINDS)})")
    workload = compress_arrivals(_rebase(workload), options.compress)
    workload = with_claims(workload, "image", CLAIM_DELAY)
    cluster: ClusterDefinition = pai_cluster(traces) if kind == "pai" else dlrm_cluster(workload)
    if kind == "dlrm":
        workload.assumptions.append(
            f"DLRM: synthetic cluster of {len(cluster.nodes)} nodes sized to the peak demand"
        )
    span = workload.arrivals[-1].at_ns if workload.arrivals else 0
    rng = random.Random(seed)
    return SimSetup(
        name=f"trace-{kind}",
        options=SimOptions(
            seed=seed,
            session_interval_ns=options.session_interval_ns,
            horizon_ns=span + options.tail_ns,
            task_skew_ns=options.task_skew_ns,
            snapshot_every=options.snapshot_every,
        ),
        cluster=cluster,
        workload=workload,
        faults=_faults(rng, max(span, 1), options),
    )
