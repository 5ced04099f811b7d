"""Importing the real traces beside the repository (shared/traces) into co-start groups."""

from __future__ import annotations

from pathlib import Path

import pytest

from costart.sim.traces.dlrm import import_dlrm
from costart.sim.traces.pai import import_pai, read_machines
from tests.sim.helpers import TRACES


@pytest.fixture(scope="module")
def traces() -> Path:
    assert (TRACES / "README.md").exists(), f"the shared traces are expected at {TRACES}"
    return TRACES


def test_pai_multi_role_jobs_become_groups_with_a_member_per_role(traces):
    workload = import_pai(traces)
    assert 700 <= len(workload.arrivals) <= 856  # complete multi-role jobs with start times
    roles = {tuple(sorted(m.name for m in a.spec.members)) for a in workload.arrivals}
    assert ("ps", "worker") in roles and ("evaluator", "ps", "worker") in roles
    assert all(len(a.spec.members) >= 2 for a in workload.arrivals)
    assert [a.at_ns for a in workload.arrivals] == sorted(a.at_ns for a in workload.arrivals)
    first = workload.arrivals[0]
    assert first.runs["ps"].runtime_ns is None and first.runs["worker"].runtime_ns > 0
    assert any("submit time" in line for line in workload.assumptions)


def test_pai_machine_list_is_the_cluster(traces):
    machines = read_machines(traces)
    assert len(machines) == 1896 or len(machines) == 1897
    assert {m.gpu_type for m in machines} >= {"P100", "T4", "V100", "CPU"}


def test_dlrm_waves_with_both_roles_become_groups(traces):
    workload = import_dlrm(traces)
    assert len(workload.arrivals) == 133
    for arrival in workload.arrivals[:20]:
        cn, hn = arrival.spec.members
        assert (cn.name, hn.name) == ("cn", "hn")
        assert cn.shape.gpu == 0 and hn.shape.gpu == 1
        assert arrival.lifetime_ns and arrival.lifetime_ns > 0


def test_imports_are_deterministic(traces):
    assert import_pai(traces, max_groups=50) == import_pai(traces, max_groups=50)
    assert import_dlrm(traces, max_groups=20) == import_dlrm(traces, max_groups=20)
