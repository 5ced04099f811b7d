"""The incremental step keeps the live groups in session order across sessions: when the usage's
live list only dropped some groups and appended new ones, the kept order is filtered and
the new groups inserted, instead of sorting again. It must be exactly the sorted list
(the same entries, in the same order) every session."""

from __future__ import annotations

from typing import Any

import pytest

from costart.cli.sim_cmd import controller_factory
from costart.domain.world import World
from costart.placement.incremental import IncrementalStep
from costart.placement.incremental import step as step_module
from costart.sim.results import POLICIES, run_policy
from tests.sim.helpers import setup_of

from .workload import run_workload


class OrderCheck:
    """After every session, the kept order must be the live list sorted from scratch;
    counts the sessions whose order was made incrementally."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.incremental = 0
        decide, merge = IncrementalStep.decide, step_module._live_in_order

        def checked(step: IncrementalStep, world: World, now_ns: int) -> Any:
            decisions = decide(step, world, now_ns)
            live, order = step._ordered
            assert live is step._usage.live
            # Priority first (high first), then submission; stable.
            fresh = sorted(live, key=lambda pair: (-pair[0].spec.priority, pair[0].submission_seq))
            assert len(order) == len(fresh)
            assert all(a is b for a, b in zip(order, fresh, strict=True))
            return decisions

        def counted(usage: Any, before: object, order: Any) -> Any:
            relisted = usage.relisted
            self.incremental += relisted is not None and relisted[0] is before
            return merge(usage, before, order)

        monkeypatch.setattr(IncrementalStep, "decide", checked)
        monkeypatch.setattr(step_module, "_live_in_order", counted)


@pytest.mark.parametrize("seed", [3, 11, 2024])
def test_the_kept_session_order_equals_a_sort_from_scratch(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    check = OrderCheck(monkeypatch)
    run_workload(seed)
    assert check.incremental > 5


@pytest.mark.parametrize("policy", POLICIES)
def test_the_simulators_kept_session_order_equals_a_sort_from_scratch(
    policy: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    check = OrderCheck(monkeypatch)
    run_policy(setup_of("mixed", seed=4), policy, controller_factory)
    assert check.incremental > 100
