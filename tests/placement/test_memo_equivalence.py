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
from costart.domain import decisions as dec
from costart.domain.spec_types import GroupSpec
from costart.domain.world import World
from costart.placement import Cluster, CoPlacementStep, InMemoryAllocator
from costart.sim.results import POLICIES, run_policy
from tests.sim.helpers import SIM_SCENARIOS, setup_of

from .workload import run_workload


class FromScratchCheck:
    """Asks the wrapped step, then a fresh step over a copy of its cluster, each
    session; they must agree."""

    def __init__(self, step: Any) -> None:
        self.step = step
        self.sessions = 0

    def check_feasible(self, spec: GroupSpec) -> None:
        self.step.check_feasible(spec)

    def check_node(self, node: str) -> None:
        self.step.check_node(node)

    def decide(self, world: World, now_ns: int) -> list[dec.Decision]:
        kept = self.step.decide(world, now_ns)
        inner = self.step.step if hasattr(self.step, "step") else self.step
        cluster = Cluster(inner.cluster.levels, inner.cluster.nodes)
        fresh = CoPlacementStep(InMemoryAllocator(cluster), inner.placement_groups)
        assert fresh.decide(world, now_ns) == kept, f"session {self.sessions} differs"
        self.sessions += 1
        return kept


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
