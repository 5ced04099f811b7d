"""The two workloads written from published trace shapes (ADR 0114) are what their
header comments say: offered load, the mix of work, and limits no run outlives.

Cheap: the runs are drawn, never simulated (`bench/bench_scheduling.py` measures them).
"""

from __future__ import annotations

from collections import Counter

import msgspec
import pytest

from costart.sim.setup import HOUR_NS, SimSetup
from costart.sim.workload import Workload
from tests.sim.helpers import setup_of


def offered_gpu_hours(setup: SimSetup, gpu_type: str | None = None) -> float:
    """Every arrival's GPU-hours as drawn (jobs: tasks x GPUs x run time; services:
    desired replicas x GPUs x the group's lifetime, else its longest job's run time),
    counting only members of ``gpu_type`` (any type when None) — what the scenario
    offers, before any policy places it."""
    total = 0
    for arrival in setup.workload.arrivals:
        jobs = [r.runtime_ns for r in arrival.runs.values() if r.runtime_ns is not None]
        group_length = arrival.lifetime_ns or max(jobs, default=0)
        for member in arrival.spec.members:
            if gpu_type is not None and member.shape.gpu_type != gpu_type:
                continue
            run = arrival.runs.get(member.name)
            has_runtime = run is not None and run.runtime_ns is not None
            length = run.runtime_ns if has_runtime and run is not None else group_length
            total += member.count * member.shape.gpu * (length or 0)
    return total / HOUR_NS


def only(setup: SimSetup, workload: str) -> SimSetup:
    """The run with the arrivals of one of its workloads only."""
    arrivals = [a for a in setup.workload.arrivals if a.workload == workload]
    return msgspec.structs.replace(setup, workload=Workload(setup.workload.name, arrivals))


def capacity_gpu_hours(setup: SimSetup, gpu_type: str | None = None) -> float:
    gpus = sum(n.gpu for n in setup.cluster.nodes if gpu_type in (None, n.gpu_type))
    return gpus * setup.options.horizon_ns / HOUR_NS


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_half_partition_offers_the_h100_partition_about_its_capacity(seed: int) -> None:
    setup = setup_of("half-partition", seed)
    assert capacity_gpu_hours(setup, "H100") == 256 * 10
    load = offered_gpu_hours(setup, "H100") / capacity_gpu_hours(setup, "H100")
    print(f"seed {seed}: offered {load:.2f} of the H100 partition")
    assert 0.9 <= load <= 1.1
    gangs = [a for a in setup.workload.arrivals if a.workload == "gang"]
    assert [m.count * m.shape.gpu for a in gangs for m in a.spec.members] == [128, 128]
    sizes = Counter(m.count * m.shape.gpu for a in setup.workload.arrivals for m in a.spec.members)
    assert sizes[1] >= 0.99 * (sizes[1] + sizes[128])


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_llm_day_offers_about_80_percent_with_its_mix(seed: int) -> None:
    setup = setup_of("llm-day", seed)
    assert capacity_gpu_hours(setup) == 384 * 12
    load = offered_gpu_hours(setup) / capacity_gpu_hours(setup)
    print(f"seed {seed}: offered {load:.2f} of the cluster")
    assert 0.7 <= load <= 0.9
    kinds = Counter(a.workload for a in setup.workload.arrivals)
    assert set(kinds) == {
        "dev",
        "sweep",
        "four-gpu",
        "eight-gpu",
        "ddp",
        "pretrain",
        "rl",
        "serving",
    }
    small = kinds["dev"] + kinds["sweep"]
    assert small >= 0.85 * sum(kinds.values())  # counts are dominated by 1-GPU work
    pretrain = offered_gpu_hours(only(setup, "pretrain"))
    assert pretrain >= 0.25 * offered_gpu_hours(setup)  # few runs, much of the GPU time


@pytest.mark.parametrize("name", ["half-partition", "llm-day"])
def test_some_work_declares_loose_limits_that_no_run_outlives(name: str) -> None:
    setup = setup_of(name, 1)
    limited = unlimited = 0
    for arrival in setup.workload.arrivals:
        for member in arrival.spec.members:
            run = arrival.runs.get(member.name)
            if member.max_runtime_ns is None:
                unlimited += 1
                continue
            limited += 1
            assert run is not None and run.runtime_ns is not None
            assert run.runtime_ns <= member.max_runtime_ns
    print(f"{name}: {limited} members limited, {unlimited} not")
    assert limited > 0 and unlimited > 0
