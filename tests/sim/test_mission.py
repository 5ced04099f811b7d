"""The mission check: where the naive start wastes accelerators on partial starts or
deadlocks, costart (atomic and reserve) has no partial start and no deadlock."""

from __future__ import annotations

import pytest

from costart.sim.trace_setup import TraceOptions, trace_setup
from tests.sim.helpers import TRACES, run, setup_of


def test_independent_deadlocks_the_trap_that_costart_runs_to_completion():
    setup = setup_of("deadlock-trap")
    naive = run(setup, "independent")
    assert naive.deadlocked == 3 and naive.started == 0
    assert naive.partial_start_waste_gpu_hours > 1000  # held idle until the horizon
    for policy in ("atomic", "reserve"):
        result = run(setup, policy)
        assert result.succeeded == 3
        assert result.partial_starts == result.deadlocked == 0
        assert result.partial_start_waste_gpu_hours == 0


@pytest.fixture(scope="module")
def pai_setup():
    return trace_setup("pai", TRACES, 7, TraceOptions(max_groups=40, compress=200))


@pytest.mark.parametrize("policy", ["atomic", "reserve"])
def test_costart_starts_no_part_of_a_pai_job_alone(pai_setup, policy):
    result = run(pai_setup, policy)
    assert result.started > 0
    assert result.partial_starts == result.deadlocked == 0
    assert result.partial_start_waste_gpu_hours == 0


def test_independent_wastes_accelerator_hours_on_partial_pai_starts(pai_setup):
    result = run(pai_setup, "independent")
    assert result.partial_starts > 0
    assert result.partial_start_waste_gpu_hours > 0 or result.deadlocked > 0
