"""A session over inputs equal to the last one's reuses its waiting groups' decisions
(`LastSession`), and that reuse changes nothing the step decides.

The step is asked again over the same World at other times — either side of every
backoff end — and after the writes of the busy workload and of every simulator
scenario; each answer must equal a fresh step's, and repeats must actually happen. Only
a session that decided nothing but pend reasons for its waiting groups is repeated (one
that took capacity called the allocator); the seeds are ones whose workloads have such
sessions to ask again.
"""

from __future__ import annotations

from typing import Any

import pytest

from costart.cli.sim_cmd import controller_factory
from costart.domain import decisions as dec
from costart.domain import events as ev
from costart.domain.ids import id_text
from costart.domain.world import World
from costart.placement import CoPlacementStep
from costart.placement.incremental import IncrementalStep
from costart.placement.incremental.last_session import LastSession
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


@pytest.mark.parametrize("seed", [1, 3, 7, 10])
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


# The seed `_kept_step_with_waiting_groups` found (the 19th of 20 it may try): workloads
# are deterministic, so later callers build theirs from it alone instead of searching
# again (each caller still gets a step and World of its own to change).
_FOUND_SEED: list[int] = []


def _kept_step_with_waiting_groups() -> tuple[IncrementalStep, World, LastSession]:
    """The step of a busy workload whose last session visited waiting groups and changed
    nothing its journal lists (it only set pend reasons), and after which no member
    wants a single placement (a replica set short of a failed replica: then no session
    repeats)."""
    for seed in _FOUND_SEED or range(20):
        steps: list[CoPlacementStep] = []

        def wrap(step: CoPlacementStep) -> Any:
            steps.append(step)
            return step

        run_workload(seed, wrap=wrap)
        step = steps[0]
        assert isinstance(step, IncrementalStep)
        last, world = step._last, step._usage._cursor.world
        if (
            last is not None
            and last.visits
            and world is not None
            and not step._usage.wanting
            and last.journal.since(last.mark, world) == []
        ):
            _FOUND_SEED[:] = [seed]
            return step, world, last
    raise AssertionError("no workload ended with waiting groups")


@pytest.mark.parametrize("which", ["group", "member"])
def test_a_journaled_change_of_a_waiting_group_or_member_is_not_repeated(
    which: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only the journal tells a repeat that a waiting group or member changed: one
    journaled key of either makes the session be decided afresh (to the same answer,
    as nothing really changed); a pend reason change (not journaled) does not."""
    step, world, last = _kept_step_with_waiting_groups()
    repeats = Repeats(monkeypatch)
    now = last.inputs.now_ns
    decided = step.decide(world, now)
    assert repeats.answered == 1
    group, members = last.inputs.order[min(last.visits)]
    key = id_text(group.id) if which == "group" else id_text(members[-1].id)
    step.journal.keys.append(key)  # as a committed event about it is noted
    assert step.decide(world, now) == decided
    assert repeats.answered == 1 and repeats.asked == 2
    assert step.decide(world, now) == decided
    assert repeats.answered == 2  # nothing journaled since the last session


def test_a_pend_reason_change_is_repeated_over(monkeypatch: pytest.MonkeyPatch) -> None:
    step, world, last = _kept_step_with_waiting_groups()
    repeats = Repeats(monkeypatch)
    group, _ = last.inputs.order[min(last.visits)]
    reason = ev.PendReason(cls="capacity", message="a reason the step did not give")
    event = ev.PendReasonChanged(
        originator_id=group.id,
        originator_version=group.version + 1,
        group_id=group.id,
        at_ns=world.clock_ns,
        reason=reason,
    )
    world.apply(event)  # committed, as the Controller does: folded, then handed over
    world.position += 1
    step.committed([event], world.position)
    assert step.decide(world, last.inputs.now_ns) == ComparedStep(step).fresh().decide(
        world, last.inputs.now_ns
    )
    assert repeats.answered == 1
