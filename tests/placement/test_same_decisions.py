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
# behind others became class ``queue``. And again, seeds 1-6, 8, 9, 11, 12, 14 and 16-19
# (ADR 0116): a reason counts and names the reservations ahead only up to three, so a
# shift of the queue does not restate every reason behind it; every decision but the
# reasons' is byte-identical to before on all twenty seeds.
RECORDED = {
    0: "577014202e39295e",
    1: "0ec767372829d318",
    2: "7ae16b29955e9040",
    3: "469c199e55dfe3b7",
    4: "02aa82fab14527c4",
    5: "bc6c4efc787b6d7e",
    6: "83f654121c368d96",
    7: "60255c950d4093b3",
    8: "0473a9b0f4274b24",
    9: "3608c15b1237f6ba",
    10: "d357404223352dbb",
    11: "fb929efec3c28cbe",
    12: "d226f2bd1bdf741c",
    13: "ca5bd12b6da0faf7",
    14: "d1f0438e0d967966",
    15: "0b1cc3a137f77363",
    16: "fc14bff937f9a31b",
    17: "5308fee8ed55f9a5",
    18: "cf0b6d47ee6014de",
    19: "93c1fe3394faa3c7",
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
