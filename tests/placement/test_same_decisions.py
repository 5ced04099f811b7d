"""The step decides the same, byte for byte: as recorded before its hot paths were
optimized, and in fresh processes with different string hash seeds."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from .workload import digests, run_workload

ROOT = Path(__file__).resolve().parents[2]

# Digest of every session's decisions of `run_workload(seed)`, recorded with the plain
# (pre-optimization) step. A change here is a change in what the step decides: it needs
# a reason, not a new recording. Changed so far: seeds 1, 5, 14, 17 and 19, when the
# infeasibility cache stopped answering by group: it kept a group's first answer after
# its placement group's anchor or its own holds moved (stale "infeasible" reasons, and
# in seed 5 a reservation released for it). Changed again: seeds 5, 9, 11, 12, 14, 16, 17
# and 19, when the planner began retrying a failed plan with typed members laid out first
# (an untyped member had taken the only nodes a typed one could use). In each of them no
# session differs before the first plan only that retry found; seeds where the retry
# never finds a plan are unchanged.
RECORDED = {
    0: "fea53fdb747bff18",
    1: "18d79526bcac63b1",
    2: "22562a9b5629ebe8",
    3: "7dc5f805be88fd4e",
    4: "a9af49d87242a817",
    5: "d9932e5bdd83e55d",
    6: "5b9a68a13e316472",
    7: "7aaf1f0f5e3afd44",
    8: "28319adb731dc72f",
    9: "58b09051a5811417",
    10: "574c7cf5430a63dc",
    11: "0e6d901fcfc5e6e4",
    12: "78bf2bc2a4abdb7a",
    13: "a47b188967d7e80c",
    14: "c7a2f16e59547515",
    15: "b145d1d516b1a985",
    16: "8bbddc5acfec1e2c",
    17: "ead016f152fdbf4b",
    18: "2ec3e313af6962d3",
    19: "15c65601fd61a49c",
}


def _whole(session_digests: list[str]) -> str:
    return hashlib.sha256("".join(session_digests).encode()).hexdigest()[:16]


@pytest.mark.parametrize("seed", sorted(RECORDED))
def test_the_step_decides_exactly_as_recorded_on_a_seeded_busy_workload(seed: int) -> None:
    assert _whole(digests(run_workload(seed))) == RECORDED[seed]


def _in_fresh_process(seed: int, hash_seed: str) -> list[str]:
    env = {**os.environ, "PYTHONHASHSEED": hash_seed, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-m", "tests.placement.workload", str(seed)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return done.stdout.split()


@pytest.mark.parametrize("seed", [3, 9])
def test_decisions_are_the_same_in_fresh_processes_with_other_hash_seeds(seed: int) -> None:
    here = digests(run_workload(seed))
    assert _in_fresh_process(seed, "0") == here
    assert _in_fresh_process(seed, "4242") == here
