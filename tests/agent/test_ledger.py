"""The agent's launch ledger reads only records the agent itself wrote: anything else in
its state directory is skipped with a warning, and the agent runs on
(`costart.agent.ledger`)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
import structlog

from costart.agent.ledger import LaunchRecord, Ledger
from tests.agent.root import require_root

GOOD = LaunchRecord("gid", "m", 0, 1, "g/m/0", pid=123, start_ticks=456, uid=1000)


def broken(path: Path) -> None:
    path.write_text("{")


def a_link(path: Path) -> None:
    target = path.with_name("elsewhere")
    target.write_bytes(b"{}")
    path.symlink_to(target)


def a_directory(path: Path) -> None:
    path.mkdir()


def a_fifo(path: Path) -> None:
    os.mkfifo(path)


def someone_elses(path: Path) -> None:
    require_root()  # giving it away
    path.write_bytes(b"{}")
    os.chown(path, 65534, 65534)


@pytest.mark.parametrize(
    ("make", "why"),
    [
        (broken, "not a record"),
        (a_link, "a symbolic link"),
        (a_directory, "not a regular file"),
        (a_fifo, "not a regular file"),
        (someone_elses, "owned by uid 65534"),
    ],
    ids=["broken", "link", "directory", "fifo", "foreign"],
)
def test_a_record_file_the_agent_did_not_write_is_skipped_with_a_warning(
    tmp_path: Path, make: Callable[[Path], None], why: str
) -> None:
    ledger = Ledger(tmp_path / "state")
    ledger.write(GOOD)
    bad = tmp_path / "state" / "bad.json"
    make(bad)
    with structlog.testing.capture_logs() as logs:
        assert ledger.records() == [GOOD]
    [warning] = [e for e in logs if e["log_level"] == "warning"]
    assert warning["path"] == str(bad) and why in warning["why"]


def test_a_record_written_before_records_named_an_account_reads_with_no_uid(tmp_path: Path):
    ledger = Ledger(tmp_path / "state")
    old = b'{"group_id":"gid","member":"m","index":0,"attempt":1,"ref":"g/m/0","pid":7}'
    (tmp_path / "state" / "gid.m.0.1.json").write_bytes(old)
    assert ledger.records() == [LaunchRecord("gid", "m", 0, 1, "g/m/0", pid=7)]
    assert ledger.records()[0].uid is None


def test_the_ledger_directory_is_made_private(tmp_path: Path):
    Ledger(tmp_path / "state")
    assert (tmp_path / "state").stat().st_mode & 0o777 == 0o700
