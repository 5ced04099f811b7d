"""The step decides the same, byte for byte: as recorded before its hot paths were
optimized — the plain reference step and the incremental one alike — and in fresh
processes with different string hash seeds."""

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
# never finds a plan are unchanged. Changed again: every seed but 1 and 15, when the
# workload's reports became per task and attempt-stamped (its "member fails" on a replica
# set now fails one replica, which the set outlives, instead of the whole set); the step
# itself (costart/placement) was not changed by that commit, only what it was given.
# And again, every seed: pend reasons began storing facts instead of clock text (the
# retry time in ``until_ns``, the groups ahead in ``ahead``) and a reservation that waits
# behind others became class ``queue``.
RECORDED = {
    0: "577014202e39295e",
    1: "60517ae9aebff6c6",
    2: "f812184327283b65",
    3: "fc80aa1b32301d0a",
    4: "3a385f75bbc353e3",
    5: "ee7de9c4624e2472",
    6: "556e2c3033bc6aff",
    7: "60255c950d4093b3",
    8: "aec81c5485cfaa78",
    9: "a8635926098f0120",
    10: "d357404223352dbb",
    11: "85a6b23f1ed6a133",
    12: "e0de0c4bbb477b09",
    13: "ca5bd12b6da0faf7",
    14: "bf04bc4995a7b614",
    15: "0b1cc3a137f77363",
    16: "e50d29cb9afad994",
    17: "0bd7d16bee7c48a1",
    18: "bcc8d9b43a120a57",
    19: "1bbe2116d74cba23",
}


def _whole(session_digests: list[str]) -> str:
    return hashlib.sha256("".join(session_digests).encode()).hexdigest()[:16]


@pytest.mark.parametrize("seed", sorted(RECORDED))
def test_the_step_decides_exactly_as_recorded_on_a_seeded_busy_workload(seed: int) -> None:
    assert _whole(digests(run_workload(seed))) == RECORDED[seed]


@pytest.mark.parametrize("seed", sorted(RECORDED))
def test_the_plain_step_decides_exactly_as_recorded_on_a_seeded_busy_workload(seed: int) -> None:
    assert _whole(digests(run_workload(seed, plain=True))) == RECORDED[seed]


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
