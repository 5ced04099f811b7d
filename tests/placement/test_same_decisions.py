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
# never finds a plan are unchanged. Changed again: every seed, when pend reasons began
# storing facts instead of clock text (the retry time in ``until_ns``, the groups ahead in
# ``ahead``) and a reservation that waits behind others became class ``queue``; every decision
# other than a `SetPendReason` is byte-identical to before on all 20 seeds.
RECORDED = {
    0: "7e21ad11f30b736b",
    1: "60517ae9aebff6c6",
    2: "494bb3b66318ee58",
    3: "8f2c8e9e763e7c6c",
    4: "4a4a20eb86d1b875",
    5: "d9788c8e4e25551e",
    6: "e2c8756fa1e1c242",
    7: "34db3dcb44b5fb1b",
    8: "d9d551e0ce37f513",
    9: "0884b42c421001cc",
    10: "9617b39b88b4fa4b",
    11: "193aceca1f5b5e61",
    12: "0dfd3dc4427b497d",
    13: "835d9b52d6885c2b",
    14: "f61adf563d773c7a",
    15: "0b1cc3a137f77363",
    16: "485aa162b53f5a86",
    17: "2f3cfee182dfafac",
    18: "862742aac20b64e3",
    19: "d9f0974a8163401b",
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
