"""A session that makes the carried per-node arrays afresh promotes what it leaves past
the collector's young generations (`costart.gc_pause.promote_tracked`, ADR 0153): the
first young collection after a cold step walked every reference of those arrays. Only
such sessions promote (a start brought up to date in place leaves the collector be),
and never while the process has frozen objects."""

from __future__ import annotations

import gc
from typing import Any

import pytest

from costart.domain import decisions as dec
from costart.domain.world import World
from costart.gc_pause import promote_tracked
from costart.placement import CoPlacementStep
from costart.placement.incremental import IncrementalStep
from costart.placement.incremental import step as step_module
from costart.placement.incremental.carried import CarriedLedger
from tests.placement.workload import run_workload


def _in_generation(obj: object, generation: int) -> bool:
    return any(o is obj for o in gc.get_objects(generation=generation))


def test_promoting_moves_young_objects_to_the_oldest_generation_unwalked() -> None:
    kept = [[i] for i in range(10)]
    assert promote_tracked()
    assert gc.get_count()[0] == 0
    assert _in_generation(kept, 2) and _in_generation(kept[0], 2)


def test_promoting_leaves_a_process_with_frozen_objects_as_it_is() -> None:
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        assert frozen > 0
        assert not promote_tracked()
        assert gc.get_freeze_count() == frozen  # nothing thawed
    finally:
        gc.unfreeze()


class _Watch:
    """Around the step: per session, whether its carried start was made from scratch
    and whether the session promoted; after a promoting session, where the carried
    arrays are."""

    def __init__(self, step: CoPlacementStep, monkeypatch: pytest.MonkeyPatch) -> None:
        assert isinstance(step, IncrementalStep)
        self.step = step
        self.afresh: list[bool] = []
        self.promoted: list[bool] = []
        self.oldest: list[bool] = []
        self._afresh = False
        self._promoted = False
        init = CarriedLedger.__init__

        def watched_init(ledger: CarriedLedger, *args: Any, **kwargs: Any) -> None:
            init(ledger, *args, **kwargs)
            self._afresh |= ledger._candidates is None

        def watched_promote() -> bool:
            self._promoted = True
            return promote_tracked()

        monkeypatch.setattr(CarriedLedger, "__init__", watched_init)
        monkeypatch.setattr(step_module, "promote_tracked", watched_promote)

    def __getattr__(self, name: str) -> object:
        return getattr(self.step, name)

    def decide(self, world: World, now_ns: int) -> list[dec.Decision]:
        self._afresh = self._promoted = False
        decisions = self.step.decide(world, now_ns)
        self.afresh.append(self._afresh)
        self.promoted.append(self._promoted)
        if self._promoted and not any(self.oldest):
            self.oldest.append(_in_generation(self.step._start.free, 2))
        return decisions


def test_only_a_session_that_made_the_carried_start_afresh_promotes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    watches: list[_Watch] = []

    def wrap(step: CoPlacementStep) -> CoPlacementStep:
        watches.append(_Watch(step, monkeypatch))
        return watches[0]  # type: ignore[return-value]

    run_workload(3, sessions=25, groups=40, wrap=wrap)
    watch = watches[0]
    print(
        f"sessions {len(watch.afresh)}: made afresh {sum(watch.afresh)}, warm "
        f"{len(watch.afresh) - sum(watch.afresh)}"
    )
    assert watch.promoted == watch.afresh
    assert 0 < sum(watch.afresh) < len(watch.afresh)  # both kinds of session ran
    assert watch.oldest == [True]  # the carried arrays went past the young generations
