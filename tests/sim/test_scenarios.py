"""Every sim scenario runs under every policy with zero invariant violations, and
costart never starts part of a group."""

from __future__ import annotations

import pytest

from costart.sim.results import POLICIES
from tests.sim.helpers import SIM_SCENARIOS, run, setup_of


def test_the_five_scenarios_exist():
    assert set(SIM_SCENARIOS) >= {
        "rl-post-training",
        "disaggregated-serving",
        "streaming-pipeline",
        "mixed",
        "deadlock-trap",
    }


@pytest.mark.parametrize("scenario", SIM_SCENARIOS)
@pytest.mark.parametrize("policy", POLICIES)
def test_each_scenario_runs_with_every_invariant_checked_after_every_step(scenario, policy):
    # check_world raises on the first violation, so finishing is the assertion.
    result = run(setup_of(scenario), policy)
    assert result.invariant_checks > 0
    assert result.events_audited == result.log_events
    assert result.started + result.never_started + result.rejected == result.groups
    if policy != "independent":
        assert result.partial_starts == 0
        assert result.partial_start_waste_gpu_hours == 0
        assert result.deadlocked == 0


def test_faults_fire_in_the_scenarios_that_ask_for_them():
    result = run(setup_of("rl-post-training"), "reserve")
    assert result.node_losses == 2
    assert result.controller_restarts == 2
    assert result.restore_checks == 2
    assert result.failed + result.succeeded + result.cancelled == result.groups


def test_a_controller_down_for_a_while_is_restored_and_catches_up():
    result = run(setup_of("streaming-pipeline"), "atomic")
    assert result.controller_restarts == result.restore_checks == 1
    assert result.never_started == 0
