"""A session over inputs equal to the last one's reuses its waiting groups' decisions
(`LastSession`), and that reuse changes nothing the step decides.

The step is asked again over the same World at other times — either side of every
backoff end — and after the writes of the busy workload and of every simulator
scenario; each answer must equal a fresh step's, and repeats must actually happen.
"""

from __future__ import annotations

from typing import Any

import pytest

from costart.cli.sim_cmd import controller_factory
from costart.domain import decisions as dec
from costart.domain.world import World
from costart.placement import CoPlacementStep
from costart.placement.last_session import LastSession
from costart.sim.results import POLICIES, run_policy
from tests.sim.helpers import setup_of

from .compared_step import ComparedStep
from .workload import run_workload


class Repeats:
    """Counts the sessions `LastSession.repeat` answered."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.answered = 0
        self.asked = 0
        repeat = LastSession.repeat

        def counting(last: LastSession, *args: Any) -> list[dec.Decision] | None:
            answer = repeat(last, *args)
            self.asked += 1
            self.answered += answer is not None
            return answer

        monkeypatch.setattr(LastSession, "repeat", counting)


class TimeShiftCheck(ComparedStep):
    """Each session, the kept step also decides at the times around every PENDING
    group's backoff end, over the same World; a fresh step must agree each time."""

    def decide(self, world: World, now_ns: int) -> list[dec.Decision]:
        ends = sorted({g.retry_at_ns for g in world.live_groups() if g.status == "PENDING"})
        times = [now_ns, now_ns, *(t + d for t in ends for d in (-1, 0, 1)), now_ns]
        for t in times:
            assert self.step.decide(world, t) == self.fresh().decide(world, t), (
                f"session {self.sessions} at t={t}"
            )
        self.sessions += 1
        return self.step.decide(world, now_ns)


@pytest.mark.parametrize("seed", [1, 7, 42, 1234])
def test_a_repeated_session_decides_as_a_fresh_step_at_any_time(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    repeats = Repeats(monkeypatch)
    checks: list[TimeShiftCheck] = []

    def wrap(step: CoPlacementStep) -> Any:
        checks.append(TimeShiftCheck(step))
        return checks[-1]

    run_workload(seed, wrap=wrap)
    assert checks[0].sessions == 30
    assert 0 < repeats.answered < repeats.asked


def _checking_factory(**kwargs: Any) -> Any:
    return controller_factory(**{**kwargs, "placement": ComparedStep(kwargs["placement"])})


@pytest.mark.parametrize("policy", POLICIES)
def test_simulated_sessions_repeat_and_decide_as_a_fresh_step(
    policy: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    repeats = Repeats(monkeypatch)
    plain, _ = run_policy(setup_of("mixed", seed=5), policy, controller_factory)
    repeats.answered = 0
    checked, _ = run_policy(setup_of("mixed", seed=5), policy, _checking_factory)
    assert checked.log_sha256 == plain.log_sha256
    assert repeats.answered > 0
