"""One time base for the forensics commands (ADR 0082): an offset counts from the
group's submission when the command names a group (as `describe` and the timeline
count), else from the log's first event; every output states its base; absolute ISO
times are accepted too; errors name when the group was submitted; a time past the log's
end, or ``--from`` after ``--to``, is warned about; `diff` prints one field per line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from costart.controller import Controller
from costart.domain.actors import Actor
from costart.domain.spec import parse_spec

ROOT = Path(__file__).resolve().parents[2]
T0 = 1_764_432_000 * 10**9  # 2025-11-29T16:00:00Z
SECOND = 10**9
SPEC = """
name = "{name}"
owner = "alice"
[[members]]
name = "trainer"
kind = "job"
tasks = 2
shape = {{ gpu = 8 }}
claims = ["gpus"]
"""


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    """``early`` submitted at T0, ``late`` 60 s later, cancelled 30 s after that."""
    path = tmp_path_factory.mktemp("forensics") / "store"
    now = [T0]
    env = {
        "PERSISTENCE_MODULE": "costart.store",
        "COSTART_LMDB_PATH": str(path),
        "COSTART_SNAPSHOT_EVERY": "0",
    }
    controller = Controller(env=env, clock=lambda: now[0])
    controller.submit(parse_spec(SPEC.format(name="early"), "toml"))
    now[0] = T0 + 60 * SECOND
    controller.submit(parse_spec(SPEC.format(name="late"), "toml"))
    now[0] = T0 + 90 * SECOND
    controller.cancel("late", actor=Actor.user("alice"))
    controller.close()
    return path


def replay(store: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "costart.cli.main", "--store", str(store), "replay", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


def test_an_offset_counts_from_the_named_groups_submission(store):
    done = replay(store, "why", "late", "--at", "+10s")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == (
        "times: ISO-8601 UTC, and +offset from late's submission at 2025-11-29T16:01:00Z"
    )
    assert lines[1].startswith("late: PENDING at 2025-11-29T16:01:10Z (+10s)")
    # The same moment as an absolute time: the same answer.
    absolute = replay(store, "why", "late", "--at", "2025-11-29T16:01:10Z")
    assert absolute.stdout == done.stdout
    state = replay(store, "state", "--group", "late", "--at", "35s")
    assert "controller time 2025-11-29T16:01:30Z (+30s)" in state.stdout  # the cancel
    assert state.stdout.splitlines()[0].endswith("late's submission at 2025-11-29T16:01:00Z")


def test_without_a_group_offsets_count_from_the_logs_first_event(store):
    done = replay(store, "diff", "--from", "59s", "--to", "+61s")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == (
        "times: ISO-8601 UTC, and +offset from the log's first event at 2025-11-29T16:00:00Z"
    )
    assert "group late (exists): no -> yes" in lines
    # Field by field, one line each: never a whole array or object.
    assert "member late/trainer (exists): no -> yes" in lines
    assert all(" -> {" not in line and " -> [" not in line for line in lines), lines


def test_a_group_that_did_not_exist_yet_is_told_when_it_was_submitted(store):
    done = replay(store, "why", "late", "--at", "2025-11-29T16:00:30Z")
    assert done.returncode == 4
    assert done.stderr.splitlines() == [
        "error: no group named 'late' existed at 2025-11-29T16:00:30Z (+30s from the log's "
        "first event); it was submitted at 2025-11-29T16:01:00Z (+1m00s from the log's first event)"
    ]
    assert " ns" not in done.stderr


def test_a_time_past_the_end_and_from_after_to_are_warned_about(store):
    late = replay(store, "why", "early", "--at", "99h")
    assert late.returncode == 0, late.stderr
    assert late.stderr.startswith("warning: --at 99h is 2025-12-03T19:00:00Z (+4d03h), after ")
    assert "the answer is the state at the end of the log" in late.stderr
    backwards = replay(store, "diff", "--from", "90s", "--to", "10s")
    assert backwards.returncode == 0, backwards.stderr
    assert "warning: --from 90s is after --to 10s" in backwards.stderr
    ordered = replay(store, "diff", "--from", "10s", "--to", "90s")
    assert ordered.stderr == ""


def test_describe_and_the_timeline_state_their_base(store, tmp_path):
    copy = tmp_path / "copy"
    subprocess.run(["cp", "-r", str(store), str(copy)], check=True)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "costart.cli.main",
            "--store",
            str(copy),
            "describe",
            "group",
            "late",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "Recent events (TIME: +offset from the group's submission)" in done.stdout
    assert "Pend-reason history (+offset from the group's submission)" in done.stdout
    timeline = replay(store, "timeline", "late")
    assert timeline.stdout.splitlines()[0] == (
        "times: ISO-8601 UTC, and +offset from late's submission at 2025-11-29T16:01:00Z"
    )
