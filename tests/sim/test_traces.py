"""Importing the traces into co-start groups, on the extracts in the repository
(`tests/data/traces/`: 76 real PAI 2020 jobs, a generated DLRM-shaped stand-in)."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from costart.sim.traces.dlrm import import_dlrm
from costart.sim.traces.pai import import_pai, read_machines
from tests.sim.helpers import TRACES


@pytest.fixture(scope="module")
def traces() -> Path:
    return TRACES


def test_pai_multi_role_jobs_become_groups_with_a_member_per_role(traces):
    workload = import_pai(traces)
    # The extract holds 60 complete multi-role jobs with start times, 10 single-role jobs
    # and 6 incomplete multi-role ones: exactly the 60 become groups.
    assert len(workload.arrivals) == 60
    names = {a.spec.name for a in workload.arrivals}
    jobs = _jobs(traces)
    kept = {f"pai-{j['job_name'][:16]}" for j in jobs if j["complete_in_sample"] == "1"}
    assert names <= {n for n in kept}
    single = {f"pai-{j['job_name'][:16]}" for j in jobs if j["multi_role"] == "0"}
    incomplete = {f"pai-{j['job_name'][:16]}" for j in jobs if j["complete_in_sample"] == "0"}
    assert len(single) == 10 and len(incomplete) == 6 and not names & (single | incomplete)
    roles = {tuple(sorted(m.name for m in a.spec.members)) for a in workload.arrivals}
    assert ("ps", "worker") in roles and ("evaluator", "ps", "worker") in roles
    assert all(len(a.spec.members) >= 2 for a in workload.arrivals)
    assert [a.at_ns for a in workload.arrivals] == sorted(a.at_ns for a in workload.arrivals)
    first = workload.arrivals[0]
    assert first.runs["ps"].runtime_ns is None and first.runs["worker"].runtime_ns > 0
    assert any("submit time" in line for line in workload.assumptions)


def test_pai_machine_list_is_the_cluster(traces):
    machines = read_machines(traces)
    assert len(machines) == 1897  # the whole machine list, verbatim
    assert {m.gpu_type for m in machines} >= {"P100", "T4", "V100", "CPU"}


def test_dlrm_waves_with_both_roles_become_groups(traces):
    workload = import_dlrm(traces)
    waves: dict[tuple[str, int], set[str]] = {}
    with (traces / "alibaba_v2025_disaggregated_DLRM_trace.csv").open(newline="") as handle:
        for row in csv.DictReader(handle):
            if row["creation_time"]:
                key = (row["app_name"], int(row["creation_time"]) // 60)
                waves.setdefault(key, set()).add(row["role"])
    both = [k for k, roles in waves.items() if roles == {"CN", "HN"}]
    # The stand-in has 61 minute-waves: 35 with both roles become groups, 26 with one do not.
    assert (len(waves), len(both), len(workload.arrivals)) == (61, 35, 35)
    assert {a.spec.name for a in workload.arrivals} == {
        f"{app.replace('_', '-')}-w{bucket}" for app, bucket in both
    }
    for arrival in workload.arrivals[:20]:
        cn, hn = arrival.spec.members
        assert (cn.name, hn.name) == ("cn", "hn")
        assert cn.shape.gpu == 0 and hn.shape.gpu == 1
        assert arrival.lifetime_ns and arrival.lifetime_ns > 0


def test_imports_are_deterministic(traces):
    assert import_pai(traces, max_groups=50) == import_pai(traces, max_groups=50)
    assert import_dlrm(traces, max_groups=20) == import_dlrm(traces, max_groups=20)


def _jobs(traces: Path) -> list[dict[str, str]]:
    with (traces / "alibaba_v2020_pai_instance_tail_jobs.csv").open(newline="") as handle:
        return list(csv.DictReader(handle))
