"""The incremental step pauses the cyclic garbage collector for a session
(`IncrementalStep.decide`, ADR 0104): sound only while a session makes no reference
cycles, which the seeded workload checks session by session."""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from costart.domain import decisions as dec
from costart.domain.world import World
from costart.placement import CoPlacementStep
from costart.placement.incremental import IncrementalStep
from tests.placement.workload import run_workload

ROOT = Path(__file__).resolve().parents[2]


class _CycleCount:
    """Around the step: per session, the collector's state inside it and the objects in
    cycles the session left (collected right after it; the controller's own garbage is
    collected right before)."""

    def __init__(self, step: CoPlacementStep) -> None:
        self.step = step
        self.paused_inside: list[bool] = []
        self.left: list[int] = []
        session = step._session

        def watched(world: World, now_ns: int) -> list[dec.Decision]:
            self.paused_inside.append(not gc.isenabled())
            return session(world, now_ns)

        step._session = watched  # type: ignore[method-assign]

    def __getattr__(self, name: str) -> object:
        return getattr(self.step, name)

    def decide(self, world: World, now_ns: int) -> list[dec.Decision]:
        gc.collect()
        decisions = self.step.decide(world, now_ns)
        assert gc.isenabled(), "the step left the collector paused"
        self.left.append(gc.collect())
        return decisions


def _cycles_left(seed: int) -> dict[str, object]:
    """Run the seeded workload with the step watched; what each session left."""
    counts: list[_CycleCount] = []

    def wrap(step: CoPlacementStep) -> CoPlacementStep:
        assert isinstance(step, IncrementalStep)
        counts.append(_CycleCount(step))
        return counts[0]  # type: ignore[return-value]

    sessions = run_workload(seed, sessions=25, groups=40, wrap=wrap)
    count = counts[0]
    placed = sum(isinstance(d, dec.PlaceGroup) for s in sessions for d in s)
    return {
        "sessions": len(sessions),
        "placed": placed,
        "paused_inside": count.paused_inside,
        "left": count.left,
    }


@pytest.mark.parametrize("seed", [3, 11])
def test_a_session_runs_with_the_collector_paused_and_leaves_no_cycles(seed: int) -> None:
    # In a fresh interpreter: ``gc.collect`` counts every thread's garbage, and threads
    # other tests leave behind (a server's, a process watcher's) would be counted as
    # the session's.
    code = (
        "import json, sys\n"
        "from tests.placement.test_gc_paused_session import _cycles_left\n"
        f"print(json.dumps(_cycles_left({seed})))"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", code],
        check=False,
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout.strip().splitlines()[-1])
    print(f"seed {seed}: {found['placed']} placements, cycles left {found['left']}")
    assert found["placed"] > 0 and len(found["left"]) == found["sessions"]
    assert found["paused_inside"] and all(found["paused_inside"])
    assert sum(found["left"]) == 0


def test_the_collector_is_left_as_it_was_found_even_when_a_session_raises():
    counts: list[_CycleCount] = []

    def wrap(step: CoPlacementStep) -> CoPlacementStep:
        counts.append(_CycleCount(step))
        return counts[0]  # type: ignore[return-value]

    run_workload(5, sessions=2, groups=4, wrap=wrap)
    step = counts[0].step

    def broken(world: World, now_ns: int) -> list[dec.Decision]:
        raise RuntimeError("planted")

    step._session = broken  # type: ignore[method-assign]
    with pytest.raises(RuntimeError, match="planted"):
        step.decide(World(), 1)
    assert gc.isenabled()
    gc.disable()
    try:
        with pytest.raises(RuntimeError, match="planted"):
            step.decide(World(), 1)
        assert not gc.isenabled()  # a host that paused it keeps it paused
    finally:
        gc.enable()
