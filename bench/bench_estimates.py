"""Benchmark: how good the expected start is (issue 36 item 3, ADR 0138).

Runs the starvation workloads (sim-starvation.toml, sim-starvation-backfill.toml) and
the PAI and DLRM traces in the simulator under the recommended policy and, right after
the scheduling session that follows each group's arrival, asks for every new waiting
group's expected start, reading the World as the controller has it then. Three
estimators are asked at the same moment:

- ``ours``: `estimate_starts` (the shadow plan over learned runs, with its interval);
- ``slurm``: the same planner over declared limits only (``squeue --start``'s model,
  ``runtimes="limits"``);
- ``naive``: position in the queue (1 for its head) times the mean learned run (the
  mean of the declared limits of the running members while nothing is learned).

For every group that waited at least `MIN_WAIT_NS` and started, the error is
|predicted - actual start| / max(actual wait, `ERROR_FLOOR_NS`); per estimator: its
median, p90 and the share within 25%. An estimator that gives no start (none within
its plan) is counted as predicting the plan's window end (a day after the question).
For ours, the share of actual starts inside [earliest, latest] (coverage; an open
bound counts as unbounded, and the share of closed intervals is given beside it).
The traces carry no declared limits: each job member is given the one a user would
write (`declared_limit`: its run plus ten minutes, rounded up to the next round
duration), kept as written. On their whole clusters almost nothing waits, so PAI runs
on every 20th machine (`PAI_SHARE`) and DLRM on half the cluster sized to its peak
(`DLRM_SHARE`).

Also times `estimate_starts` for 1,000 pending groups on the 4,096-node cluster
(`bench_placement`'s session workload, half of it placed and running first, with
declared limits and a learned history for every key): median of ``--repeats`` runs at
the default depth (the first `DEFAULT_DEPTH` waiting groups planned, as Slurm's
``bf_max_job_test`` bounds ``squeue --start``; the rest are answered "beyond the groups
planned"), and beside it one run planning every one of them (``every_group``), what a
depth of the whole queue would cost.

Run: python bench/bench_estimates.py [--seeds N] [--workloads a,b] [--traces PATH]
     [--trace-groups N] [--repeats N] [--parts accuracy,timing] [--policy NAME]
     [--pai-share F] [--dlrm-share F]
(the traces: the full ones in --traces or $COSTART_TRACES, else the repository's
extracts in tests/data/traces).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import random
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import msgspec

from costart.cli.sim_cmd import controller_factory
from costart.domain.spec_types import GroupSpec
from costart.domain.states import GROUP_WAITING
from costart.domain.world import World
from costart.logging_setup import configure_logging
from costart.placement.cluster import Cluster
from costart.placement.cluster_file import ClusterDefinition, load_cluster
from costart.placement.holdings import live_in_order
from costart.placement.incremental import IncrementalStep
from costart.placement.shadow import (
    DEFAULT_DEPTH,
    DEFAULT_WINDOW_NS,
    StartEstimate,
    estimate_starts,
)
from costart.sim.engine import Engine
from costart.sim.recommended_policy import RECOMMENDED_POLICY
from costart.sim.results import embedder_for
from costart.sim.scenario import load_scenario
from costart.sim.setup import SimSetup, draw_setup
from costart.sim.trace_setup import TraceOptions, trace_setup
from costart.sim.traces.clusters import dlrm_cluster
from costart.sim.workload import Workload

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
from bench_placement import workload as session_workload  # noqa: E402
from common import write_results  # noqa: E402

MINUTE_NS = 60 * 10**9
MIN_WAIT_NS = MINUTE_NS
ERROR_FLOOR_NS = 5 * MINUTE_NS
WITHIN = 0.25
SCENARIOS = ("starvation", "starvation-backfill")
TRACES = ("pai", "dlrm")
WORKLOADS = (*SCENARIOS, *TRACES)
ESTIMATORS = ("ours", "slurm", "naive")
EXTRACTS = ROOT / "tests" / "data" / "traces"
ROUND_LIMITS_NS = tuple(
    m * MINUTE_NS for m in (15, 30, 60, 120, 240, 480, 720, 1440, 2880, 4320, 10080)
)
LIMIT_MARGIN_NS = 10 * MINUTE_NS
PAI_SHARE = 0.05  # of the PAI machines (about 95 of 1,897)
DLRM_SHARE = 0.5  # of the DLRM cluster sized to the peak demand
TIMING_PENDING = 1000
TIMING_CLUSTER = ROOT / "scenarios" / "cluster-4096.toml"


# --- what users declare ---------------------------------------------------------------


def declared_limit(run_ns: int) -> int:
    """The limit a user writes for a run of ``run_ns``: ten minutes more, rounded up to
    the next round duration (15m, 30m, 1h, 2h, 4h, 8h, 12h, 1d, 2d, 3d, 7d), never
    below the run (longer runs: the run plus the margin)."""
    wanted = run_ns + LIMIT_MARGIN_NS
    return next((r for r in ROUND_LIMITS_NS if r >= wanted), wanted)


def with_declared_limits(workload: Workload) -> Workload:
    """Every member of every arrival with the limit its user would declare: a job's
    from its run, a service's from the group's lifetime (or its longest job's run)."""
    arrivals = []
    for arrival in workload.arrivals:
        runs = [r.runtime_ns for r in arrival.runs.values() if r.runtime_ns is not None]
        whole = arrival.lifetime_ns if arrival.lifetime_ns is not None else max(runs, default=0)
        members = tuple(
            msgspec.structs.replace(
                m, max_runtime_ns=declared_limit(arrival.run_of(m.name).runtime_ns or whole)
            )
            for m in arrival.spec.members
        )
        spec = msgspec.structs.replace(arrival.spec, members=members)
        arrivals.append(msgspec.structs.replace(arrival, spec=spec))
    note = "every member declares a limit: its run (the group's, for services) + 10m, rounded up"
    return msgspec.structs.replace(
        workload, arrivals=arrivals, assumptions=[*workload.assumptions, note]
    )


def smaller(cluster: ClusterDefinition, share: float) -> ClusterDefinition:
    """Every ``1/share``-th node of the cluster (in file order, so each pool keeps its
    share): the trace samples are a thin slice of a month on the whole cluster, where
    almost nothing waits and there is no start to estimate."""
    every = max(1, round(1 / share))
    return msgspec.structs.replace(cluster, nodes=cluster.nodes[::every])


def setups_for(
    name: str, traces: Path, trace_groups: int, share: float = 1.0
) -> Callable[[int], SimSetup]:
    if name in SCENARIOS:
        scenario = load_scenario(ROOT / "scenarios" / f"sim-{name}.toml")
        return lambda seed: draw_setup(scenario, seed)
    compress = 50.0 if name == "pai" else 1.0
    options = TraceOptions(max_groups=trace_groups, compress=compress)

    def setup(seed: int) -> SimSetup:
        drawn = trace_setup("pai" if name == "pai" else "dlrm", traces, seed, options)
        workload = with_declared_limits(drawn.workload)
        if name == "pai":
            cluster = smaller(drawn.cluster, share)
        else:  # the DLRM cluster is sized to the peak demand: ``share`` of it
            cluster = dlrm_cluster(drawn.workload, headroom=share)
        note = f"the cluster cut to {share:g} of its nodes (so that groups wait)"
        workload = msgspec.structs.replace(workload, assumptions=[*workload.assumptions, note])
        return msgspec.structs.replace(drawn, workload=workload, cluster=cluster)

    return setup


# --- the estimators ---------------------------------------------------------------------


def waiting_in_order(world: World) -> list[str]:
    """The waiting groups' names in the queue's order (priority, then submission)."""
    return [g.name for g, _ in live_in_order(world) if g.status in GROUP_WAITING]


def mean_runtime(world: World) -> int | None:
    """The naive estimator's run length: the mean learned run, else the mean declared
    limit of the running members, else none."""
    samples = [s for entry in world.runtime_history.keys.values() for s in entry.samples]
    if not samples:
        samples = [
            m.spec.max_runtime_ns
            for g, members in live_in_order(world)
            if g.status not in GROUP_WAITING
            for m in members
            if m.spec.max_runtime_ns is not None
        ]
    return sum(samples) // len(samples) if samples else None


def naive_starts(world: World, now_ns: int) -> dict[str, int | None]:
    """Queue position (1 for the head) times the mean run, from now."""
    mean = mean_runtime(world)
    return {
        name: None if mean is None else now_ns + position * mean
        for position, name in enumerate(waiting_in_order(world), start=1)
    }


class Asked(NamedTuple):
    """What the three estimators answered for one group when it was asked."""

    at_ns: int
    ours: StartEstimate
    slurm: int | None
    naive: int | None


class EstimatingEngine(Engine):
    """The simulator's engine, asking for estimates after each session for the waiting
    groups not asked before (those that arrived since the last session)."""

    asked: dict[str, Asked]

    def ask(self, cluster: Cluster) -> None:
        self.asked = {}
        self._cluster = cluster

    def _session(self) -> None:
        super()._session()
        world = self.controller.world
        new = [n for n in waiting_in_order(world) if n not in self.asked]
        if not new:
            return
        now = self.now_ns
        ours = estimate_starts(self._cluster, world, now)
        slurm = estimate_starts(self._cluster, world, now, runtimes="limits")
        naive = naive_starts(world, now)
        for name in new:
            self.asked[name] = Asked(now, ours[name], slurm[name].start_ns, naive[name])


class Outcome(NamedTuple):
    """One asked group's arrival, its actual start (None: never) and the answers."""

    arrived_ns: int
    started_ns: int | None
    asked: Asked


def run_asking(setup: SimSetup, policy: str = RECOMMENDED_POLICY) -> list[Outcome]:
    """Run ``policy`` over ``setup``, asking at every arrival."""
    embedder = embedder_for(policy, setup)
    engine = EstimatingEngine(setup, embedder, controller_factory)
    engine.ask(setup.cluster.build())
    engine.run()
    outcomes = []
    for name, asked in sorted(engine.asked.items(), key=lambda item: (item[1].at_ns, item[0])):
        original = embedder.units_by_name[name].original
        outcomes.append(Outcome(original.at_ns, original.started_ns, asked))
    return outcomes


# --- the figures ------------------------------------------------------------------------


def error(predicted_ns: int | None, outcome: Outcome) -> float:
    """|predicted - actual| / max(actual wait, the floor); no prediction: the plan's
    window end after the question. The outcome must have started."""
    assert outcome.started_ns is not None
    if predicted_ns is None:
        predicted_ns = outcome.asked.at_ns + DEFAULT_WINDOW_NS
    wait = outcome.started_ns - outcome.arrived_ns
    return abs(predicted_ns - outcome.started_ns) / max(wait, ERROR_FLOOR_NS)


def covered(estimate: StartEstimate, outcome: Outcome) -> bool:
    """Is the actual start inside [earliest, latest] (an open bound: unbounded)?"""
    started = outcome.started_ns
    assert started is not None
    low = estimate.earliest_ns
    high = estimate.latest_ns
    return (low is None or low <= started) and (high is None or started <= high)


def nearest_rank(values: Sequence[float], percentile: int) -> float:
    ordered = sorted(values)
    return ordered[max(1, -(-percentile * len(ordered) // 100)) - 1]


def error_figures(errors: Sequence[float], answered: int) -> dict[str, Any]:
    if not errors:
        return {"groups": 0}
    return {
        "median_error": round(nearest_rank(errors, 50), 4),
        "p90_error": round(nearest_rank(errors, 90), 4),
        "within_25pct": round(sum(e <= WITHIN for e in errors) / len(errors), 4),
        "answered": round(answered / len(errors), 4),
    }


def figures_of(outcomes: Sequence[Outcome]) -> dict[str, Any]:
    """The accuracy figures over the outcomes that waited at least a minute."""
    waited = [
        o
        for o in outcomes
        if (o.started_ns if o.started_ns is not None else o.arrived_ns + MIN_WAIT_NS) - o.arrived_ns
        >= MIN_WAIT_NS
    ]
    started = [o for o in waited if o.started_ns is not None]
    predictions: dict[str, Callable[[Asked], int | None]] = {
        "ours": lambda a: a.ours.start_ns,
        "slurm": lambda a: a.slurm,
        "naive": lambda a: a.naive,
    }
    out: dict[str, Any] = {
        "asked": len(outcomes),
        "waited": len(waited),
        "never_started": len(waited) - len(started),
        "scored": len(started),
    }
    for estimator, predicted in predictions.items():
        errors = [error(predicted(o.asked), o) for o in started]
        answered = sum(predicted(o.asked) is not None for o in started)
        out[estimator] = error_figures(errors, answered)
    if started:
        closed = [
            o for o in started if o.asked.ours.earliest_ns is not None and o.asked.ours.latest_ns
        ]
        out["ours"]["coverage"] = round(
            sum(covered(o.asked.ours, o) for o in started) / len(started), 4
        )
        out["ours"]["closed_intervals"] = round(len(closed) / len(started), 4)
        out["ours"]["coverage_of_closed"] = (
            round(sum(covered(o.asked.ours, o) for o in closed) / len(closed), 4)
            if closed
            else None
        )
        late = [
            o.started_ns - o.asked.ours.start_ns
            for o in started
            if o.started_ns is not None and o.asked.ours.start_ns is not None
        ]
        # How much later than the point the groups started (negative: earlier).
        out["ours"]["median_late_s"] = round(nearest_rank(late, 50) / 1e9, 1) if late else None
    return out


# --- the time for 1,000 pending groups ------------------------------------------------


def timing_world() -> tuple[Cluster, World, int]:
    """The 4,096-node cluster; `bench_placement`'s session workload with declared limits,
    placed by one session as far as it fits; more of it pending until 1,000 wait; every
    key with a learned history."""
    definition = load_cluster(TIMING_CLUSTER)
    rng = random.Random(36)
    clock = [1]
    controller = controller_factory(
        placement=IncrementalStep.in_memory(definition),
        clock=lambda: clock[0],
        env={},
        restart_of=None,
    )

    def limited(spec: GroupSpec) -> GroupSpec:
        members = tuple(
            msgspec.structs.replace(m, max_runtime_ns=rng.choice(ROUND_LIMITS_NS[2:7]))
            for m in spec.members
        )
        return msgspec.structs.replace(spec, members=members)

    specs = [limited(s) for s in session_workload(3 * TIMING_PENDING, rng)]
    first = len(specs) // 3
    for spec in specs[:first]:
        controller.submit_events(spec)
    controller.schedule(1)
    world = controller.world
    for spec in specs[first:]:
        if len(waiting_in_order(world)) >= TIMING_PENDING:
            break
        controller.submit_events(msgspec.structs.replace(spec, name=f"{spec.name}-late"))
    for spec in specs:
        for member in spec.members:
            key = f"{spec.owner} {spec.name} {member.name}"
            for _ in range(5):
                limit = member.max_runtime_ns or ROUND_LIMITS_NS[2]
                world.runtime_history.learn(key, int(limit * rng.uniform(0.1, 0.9)))
    return definition.build(), world, 2


def time_estimates(repeats: int) -> dict[str, Any]:
    """The wall time of `estimate_starts` (the target), and beside it the process's CPU
    time and the load average: on a shared machine the wall time follows the load."""
    cluster, world, now = timing_world()
    timings, cpu = [], []
    answers: dict[str, StartEstimate] = {}
    load = os.getloadavg()[0]
    for _ in range(repeats):
        started, started_cpu = time.perf_counter(), time.process_time()
        answers = estimate_starts(cluster, world, now)
        timings.append(time.perf_counter() - started)
        cpu.append(time.process_time() - started_cpu)
    running = sum(1 for g, _ in live_in_order(world) if g.status not in GROUP_WAITING)
    return {
        "nodes": len(cluster.nodes),
        "pending_groups": len(answers),
        "running_groups": running,
        "depth": DEFAULT_DEPTH,
        "planned": sum(1 for e in answers.values() if e.start_ns is not None),
        "repeats": repeats,
        "median_s": round(statistics.median(timings), 4),
        "min_s": round(min(timings), 4),
        "max_s": round(max(timings), 4),
        "cpu_median_s": round(statistics.median(cpu), 4),
        "load_average": round((load + os.getloadavg()[0]) / 2, 2),
        "every_group": _every_group(cluster, world, now),
    }


def _every_group(cluster: Cluster, world: World, now: int) -> dict[str, Any]:
    """One estimate planning the whole queue (depth = the groups waiting): not the
    target, which is at the default depth, but what planning them all costs."""
    depth = len(waiting_in_order(world))
    started, started_cpu = time.perf_counter(), time.process_time()
    answers = estimate_starts(cluster, world, now, depth=depth)
    return {
        "depth": depth,
        "planned": sum(1 for e in answers.values() if e.start_ns is not None),
        "seconds": round(time.perf_counter() - started, 4),
        "cpu_s": round(time.process_time() - started_cpu, 4),
    }


# --- the run ----------------------------------------------------------------------------


def _traces(given: Path | None) -> tuple[Path, str]:
    if given is not None and (given / "README.md").exists():
        return given, "full traces ($COSTART_TRACES or --traces)"
    return EXTRACTS, "the repository's extracts (tests/data/traces)"


def print_row(name: str, figures: dict[str, Any]) -> None:
    print(
        f"== {name}: asked {figures['asked']}, waited {figures['waited']}, scored {figures['scored']}"
    )
    for estimator in ESTIMATORS:
        f = figures[estimator]
        if not f.get("median_error") and f.get("groups") == 0:
            print(f"  {estimator:6} -")
            continue
        extra = (
            f" coverage {f['coverage']:.0%} (closed {f['closed_intervals']:.0%})"
            if "coverage" in f
            else ""
        )
        print(
            f"  {estimator:6} median {f['median_error']:.3f} p90 {f['p90_error']:.3f}"
            f" within25 {f['within_25pct']:.0%} answered {f['answered']:.0%}{extra}"
        )


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--workloads", default=",".join(WORKLOADS))
    default = os.environ.get("COSTART_TRACES")
    parser.add_argument("--traces", type=Path, default=Path(default) if default else None)
    parser.add_argument("--trace-groups", type=int, default=150)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--parts", default="accuracy,timing")
    parser.add_argument("--policy", default=RECOMMENDED_POLICY)
    parser.add_argument("--pai-share", type=float, default=PAI_SHARE)
    parser.add_argument("--dlrm-share", type=float, default=DLRM_SHARE)
    args = parser.parse_args(argv)
    configure_logging(level=logging.WARNING)
    parts = {p for p in args.parts.split(",") if p}
    if not parts <= {"accuracy", "timing"}:
        parser.error(f"unknown part in {args.parts!r} (accuracy, timing)")
    results: dict[str, Any] = {
        "benchmark": "expected start accuracy (recommended policy, virtual time) and the time "
        "for 1,000 pending groups",
    }
    # A run of one part keeps the other's figures from the file (a part run alone, e.g.
    # the timing after a change to the planner, replaces only its own).
    path = ROOT / "bench" / "results" / "estimates.json"
    if path.exists():
        kept = json.loads(path.read_text())
        for key in (
            "policy",
            "seeds",
            "traces",
            "trace_groups",
            "cluster_share",
            "workloads",
            "timing",
        ):
            if key in kept:
                results[key] = kept[key]
    if "accuracy" in parts:
        traces, source = _traces(args.traces)
        seeds = list(range(1, args.seeds + 1))
        results |= {
            "policy": args.policy,
            "seeds": seeds,
            "traces": source,
            "trace_groups": args.trace_groups,
            "cluster_share": {"pai": args.pai_share, "dlrm": args.dlrm_share},
        }
        workloads: dict[str, Any] = dict(results.get("workloads", {}))
        for name in [w for w in args.workloads.split(",") if w]:
            if name not in WORKLOADS:
                parser.error(f"unknown workload {name!r} (one of {', '.join(WORKLOADS)})")
            share = args.pai_share if name == "pai" else args.dlrm_share
            setup = setups_for(name, traces, args.trace_groups, share)
            outcomes: list[Outcome] = []
            for seed in seeds:
                print(f"\r{name} seed {seed}   ", end="", file=sys.stderr, flush=True)
                outcomes += run_asking(setup(seed), args.policy)
            print(file=sys.stderr)
            workloads[name] = figures_of(outcomes)
            print_row(name, workloads[name])
        results["workloads"] = workloads
    if "timing" in parts:
        timing = time_estimates(args.repeats)
        results["timing"] = timing
        print(
            f"== {timing['pending_groups']} pending on {timing['nodes']} nodes:"
            f" {timing['median_s']}s (median of {timing['repeats']}, the first"
            f" {timing['planned']} planned); every one planned:"
            f" {timing['every_group']['seconds']}s"
        )
    write_results("estimates", results)
    return results


if __name__ == "__main__":
    main()
