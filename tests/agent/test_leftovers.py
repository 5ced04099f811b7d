"""A ledger record is checked against the live process before a restarted agent kills
it (`costart.agent.leftovers`): real processes, some carrying a run's identity in their
environment and some not."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest

from costart.agent import proctable
from costart.agent.ledger import LaunchRecord
from costart.agent.leftovers import identity, mismatch, real_uid
from tests import child_processes
from tests.agent.harness import wait_until

RUN = LaunchRecord("gid-1", "trainer", 0, 2, "rl/trainer/0")


@pytest.fixture
def sleeps() -> Iterator[list[subprocess.Popen[bytes]]]:
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for process in started:
        process.kill()
        process.wait()


def sleep(started: list[subprocess.Popen[bytes]], marks: dict[str, str]) -> LaunchRecord:
    """A `sleep 60` with ``marks`` in its environment, and a record naming it (its pid,
    start time and uid), once it runs ``sleep`` (before its exec, /proc shows the
    parent's environment)."""
    process = child_processes.popen(["sleep", "60"], env={"PATH": os.environ["PATH"], **marks})
    started.append(process)
    wait_until(
        lambda: Path(f"/proc/{process.pid}/cmdline").read_bytes().startswith(b"sleep"),
        10,
        "sleep running",
    )
    proc = proctable.read_proc(process.pid)
    assert proc is not None
    return LaunchRecord(*RUN.key, ref=RUN.ref, pid=process.pid, start_ticks=proc.start_ticks)


def test_a_process_carrying_the_runs_identity_is_the_recorded_run(sleeps):
    record = sleep(sleeps, identity(RUN))
    assert mismatch(record) is None
    assert mismatch(msgspec.structs.replace(record, uid=os.getuid())) is None


def test_the_identity_is_the_four_names_of_a_run():
    assert identity(RUN) == {
        "COSTART_GROUP_ID": "gid-1",
        "COSTART_MEMBER": "trainer",
        "COSTART_TASK": "0",
        "COSTART_ATTEMPT": "2",
    }


def test_an_unrelated_process_with_the_right_start_time_is_not_the_run(sleeps):
    record = sleep(sleeps, {})
    why = mismatch(record)
    assert why is not None
    assert why == (
        f"pid {record.pid} does not carry the run's COSTART_GROUP_ID, COSTART_MEMBER, "
        "COSTART_TASK, COSTART_ATTEMPT"
    )


def test_a_process_of_another_run_of_the_same_task_is_not_the_run(sleeps):
    record = sleep(sleeps, identity(RUN) | {"COSTART_ATTEMPT": "1"})
    assert mismatch(record) == f"pid {record.pid} does not carry the run's COSTART_ATTEMPT"


def test_a_process_that_started_at_another_time_is_not_the_run(sleeps):
    record = sleep(sleeps, identity(RUN))
    assert record.start_ticks is not None
    why = mismatch(msgspec.structs.replace(record, start_ticks=record.start_ticks - 1))
    assert why is not None and "started at tick" in why
    assert mismatch(msgspec.structs.replace(record, start_ticks=None)) is not None


def test_a_process_of_another_account_is_not_the_run(sleeps):
    record = sleep(sleeps, identity(RUN))
    assert real_uid(record.pid) == os.getuid()
    why = mismatch(msgspec.structs.replace(record, uid=os.getuid() + 1))
    assert why == f"pid {record.pid} runs as uid {os.getuid()}, not the recorded {os.getuid() + 1}"


def test_a_pid_no_process_has_or_no_pid_is_not_the_run(sleeps):
    record = sleep(sleeps, identity(RUN))
    sleeps[0].kill()
    sleeps[0].wait()
    assert mismatch(record) == f"no process has pid {record.pid}"
    assert mismatch(msgspec.structs.replace(record, pid=None)) == "no pid recorded"
