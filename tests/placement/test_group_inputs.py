"""The scopes and gang demands the step keeps per waiting group across sessions
(`KeptInputs`) must equal the ones computed afresh at every visit: on the busy
placement workload (placement groups, holds, node loss included) and in the
simulator under every policy."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from costart.cli.sim_cmd import controller_factory
from costart.domain.states import GroupState, MemberState
from costart.placement.constraints import Scope, resolve_scopes
from costart.placement.incremental.group_inputs import KeptInputs
from costart.placement.inputs import gang_demands
from costart.placement.planner import Demand
from costart.sim.results import POLICIES, run_policy
from tests.sim.helpers import setup_of

from .workload import run_workload


class InputsCheck:
    """Checks every kept answer against a fresh one; counts the checks and the
    answers kept for groups that name a placement group."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.checks = 0
        self.pinned = 0
        scopes, demands = KeptInputs.scopes, KeptInputs.demands

        def checked_scopes(inputs: KeptInputs, group: GroupState) -> list[Scope]:
            kept = scopes(inputs, group)
            fresh = resolve_scopes(
                group.spec, inputs._cluster, inputs._definitions, inputs._world, group
            )
            assert kept == fresh, group.name
            self.checks += 1
            self.pinned += inputs._scopes[group.name][2] is not None
            return kept

        def checked_demands(
            inputs: KeptInputs, group: GroupState, members: Sequence[MemberState], *, fixed: bool
        ) -> list[Demand]:
            kept = demands(inputs, group, members, fixed=fixed)
            assert kept == gang_demands(members, inputs._cluster, fixed=fixed), group.name
            self.checks += 1
            return kept

        monkeypatch.setattr(KeptInputs, "scopes", checked_scopes)
        monkeypatch.setattr(KeptInputs, "demands", checked_demands)


@pytest.mark.parametrize("seed", [3, 11, 2024, 7])
def test_kept_scopes_and_demands_equal_fresh_ones_on_the_busy_workload(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    inputs = InputsCheck(monkeypatch)
    run_workload(seed)
    assert inputs.checks > 100
    assert inputs.pinned > 0


@pytest.mark.parametrize("policy", POLICIES)
def test_kept_scopes_and_demands_equal_fresh_ones_in_the_simulator(
    policy: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    inputs = InputsCheck(monkeypatch)
    run_policy(setup_of("mixed", seed=4), policy, controller_factory)
    assert inputs.checks > 100
