"""The step's memory across sessions changes nothing it decides.

A long-lived step keeps the World's usage current incrementally and reuses plans across
sessions (`WorldUsage`, `PlanMemo`); a step built fresh for one session has neither and
counts everything from scratch. Every session, both must decide exactly the same, on
the busy placement workload (hypothesis over its seeds) and in the simulator's scenarios
under every policy (faults and controller crashes included).
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from costart.cli.sim_cmd import controller_factory
from costart.placement import CoPlacementStep
from costart.sim.results import POLICIES, run_policy
from tests.sim.helpers import SIM_SCENARIOS, setup_of

from .compared_step import ComparedStep
from .workload import run_workload


class FromScratchCheck(ComparedStep):
    """Asks the wrapped step, then a fresh step over a copy of its cluster, each
    session; they must agree."""


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 10_000))
def test_a_long_lived_step_decides_as_a_fresh_one_every_session(seed: int) -> None:
    checks: list[FromScratchCheck] = []

    def wrap(step: CoPlacementStep) -> Any:
        checks.append(FromScratchCheck(step))
        return checks[-1]

    run_workload(seed, wrap=wrap)
    assert checks[0].sessions == 30


def _checking_factory(**kwargs: Any) -> Any:
    return controller_factory(**{**kwargs, "placement": FromScratchCheck(kwargs["placement"])})


@pytest.mark.parametrize("scenario", SIM_SCENARIOS)
@pytest.mark.parametrize("policy", POLICIES)
def test_in_every_scenario_the_simulated_step_decides_as_a_fresh_one(
    scenario: str, policy: str
) -> None:
    plain, _ = run_policy(setup_of(scenario, seed=2), policy, controller_factory)
    checked, _ = run_policy(setup_of(scenario, seed=2), policy, _checking_factory)
    assert checked.log_sha256 == plain.log_sha256
    assert checked.log_events == plain.log_events > 0
