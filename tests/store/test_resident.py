"""`release_mapped_pages`: the pages a scan of an LMDB file made resident leave the
process's resident set, and every value reads back the same afterwards; `ReadBudget`
keeps what a long scan leaves resident within its budget."""

from __future__ import annotations

import errno
import threading
from pathlib import Path

import lmdb
import pytest

from costart.eventlog.backends import PERSISTENCE_MODULE, backend_for
from costart.lmdbkit import resident
from costart.lmdbkit.resident import (
    FAULT_AROUND_BYTES,
    ReadBudget,
    _mappings,
    release_mapped_pages,
)

VALUES = 2_000
VALUE_BYTES = 8_192


def resident_kb(data_file: Path) -> int:
    """Resident kB of this process's mappings of ``data_file`` (from smaps)."""
    total, inside = 0, False
    for line in Path("/proc/self/smaps").read_text().splitlines():
        first = line.split(maxsplit=1)[0]
        if "-" in first and not first.endswith(":"):
            inside = line.split(maxsplit=5)[-1] == str(data_file)
        elif inside and first == "Rss:":
            total += int(line.split()[1])
    return total


def test_a_scanned_file_leaves_the_resident_set_and_still_reads_the_same(tmp_path):
    env = filled_env(tmp_path)
    data_file = (tmp_path / "data.mdb").resolve()
    with env.begin() as txn:
        before = [bytes(v) for _, v in txn.cursor()]
    scanned = resident_kb(data_file)
    assert scanned > VALUES * VALUE_BYTES // 1024 // 2  # the scan made the file resident
    assert release_mapped_pages(data_file) > 0
    assert resident_kb(data_file) < scanned // 10
    with env.begin() as txn:
        assert [bytes(v) for _, v in txn.cursor()] == before
    env.close()


@pytest.mark.parametrize(
    ("module", "mapped"),
    [("costart.store", True), ("costart.pgstore", False), ("costart.eventlog.memory", False)],
)
def test_each_backend_gives_back_the_pages_of_a_mapped_log_and_only_that(tmp_path, module, mapped):
    """What `serve` asks of the backend after its startup scan (ADR 0050): the LMDB log's
    data file leaves the resident set; a log that is not mapped has nothing to give."""
    env = filled_env(tmp_path)
    data_file = (tmp_path / "data.mdb").resolve()
    with env.begin() as txn:
        sum(len(v) for _, v in txn.cursor())
    scanned = resident_kb(data_file)
    backend_for({PERSISTENCE_MODULE: module}).release_mapped_pages(str(tmp_path))
    if mapped:
        assert resident_kb(data_file) < scanned // 10
    else:
        assert resident_kb(data_file) == scanned
    env.close()


def test_only_the_named_files_mappings_are_found():
    maps = (
        "7f00-7f10 r--s 00000000 08:01 1 /data/store/data.mdb\n"
        "7f10-7f20 rw-p 00000000 00:00 0 \n"
        "7f20-7f40 r--s 00000000 08:01 2 /data/store/views/data.mdb\n"
        "7f40-7f50 r--s 00000000 08:01 1 /data/store/data.mdb (deleted)\n"
    )
    assert _mappings(Path("/data/store/data.mdb"), maps) == [(0x7F00, 0x7F10)]


def test_a_file_not_mapped_releases_nothing(tmp_path):
    assert release_mapped_pages(tmp_path / "data.mdb") == 0


def filled_env(path: Path) -> lmdb.Environment:
    """An LMDB file of ``VALUES`` values of ``VALUE_BYTES`` (16 MB)."""
    env = lmdb.open(str(path), map_size=2**30)
    with env.begin(write=True) as txn:
        for i in range(VALUES):
            txn.put(b"%08d" % i, bytes([i % 251]) * VALUE_BYTES)
    return env


def test_a_read_budget_keeps_what_a_whole_scan_leaves_resident_within_the_budget(tmp_path):
    env = filled_env(tmp_path)
    data_file = (tmp_path / "data.mdb").resolve()
    budget = ReadBudget(data_file, budget_bytes=4 * 2**20)
    highest_kb, counted = 0, 0
    with env.begin() as txn:
        for i, (key, value) in enumerate(txn.cursor()):
            budget.spend(len(key) + len(value))
            counted += len(key) + len(value) + FAULT_AROUND_BYTES
            assert bytes(value) == bytes([i % 251]) * VALUE_BYTES
            if i % 20 == 0:
                highest_kb = max(highest_kb, resident_kb(data_file))
    # 16 MB read (24 MB of pages: a value is 3 pages); never more than the budget.
    assert 0 < highest_kb <= 4 * 1024
    assert budget.releases == counted // (4 * 2**20)
    env.close()


def test_a_read_budget_releases_nothing_before_it_is_spent(tmp_path):
    env = filled_env(tmp_path)
    data_file = (tmp_path / "data.mdb").resolve()
    with env.begin() as txn:
        read = [len(k) + len(v) for k, v in txn.cursor()]
    budget = ReadBudget(data_file, budget_bytes=sum(read) + len(read) * FAULT_AROUND_BYTES)
    for nbytes in read[1:]:
        budget.spend(nbytes)
    assert budget.releases == 0
    assert resident_kb(data_file) > VALUES * VALUE_BYTES // 1024 // 2
    budget.spend(read[0])  # the last byte of the budget
    assert budget.releases == 1
    assert resident_kb(data_file) < VALUES * VALUE_BYTES // 1024 // 10
    env.close()


def test_a_budget_must_be_positive(tmp_path):
    with pytest.raises(ValueError, match="budget_bytes must be positive, not 0"):
        ReadBudget(tmp_path / "data.mdb", budget_bytes=0)


class WarningsKept:
    def __init__(self, kept: list[tuple[str, dict[str, str]]]) -> None:
        self.kept = kept

    def warning(self, event: str, **fields: str) -> None:
        self.kept.append((event, fields))


def test_a_release_the_kernel_refuses_is_logged_and_the_read_goes_on(tmp_path, monkeypatch):
    def refused(data_file: Path) -> int:
        raise OSError(errno.EINVAL, f"madvise of {data_file}: Invalid argument")

    warnings: list[tuple[str, dict[str, str]]] = []
    monkeypatch.setattr(resident, "release_mapped_pages", refused)
    # The module's logger, not structlog's capture: a logger other tests used first is
    # cached and would not be captured.
    monkeypatch.setattr(resident, "log", WarningsKept(warnings))
    budget = ReadBudget(tmp_path / "data.mdb", budget_bytes=10)
    budget.spend(10)
    assert budget.releases == 1
    assert [event for event, _ in warnings] == ["mapped pages not released"]
    assert "Invalid argument" in warnings[0][1]["error"]


def test_no_release_happens_while_the_map_moves(tmp_path, monkeypatch):
    moving = threading.Event()
    released_while_moving: list[bool] = []
    monkeypatch.setattr(
        resident, "release_mapped_pages", lambda _: released_while_moving.append(moving.is_set())
    )
    budget = ReadBudget(tmp_path / "data.mdb", budget_bytes=10)
    spending = threading.Event()

    def spend() -> None:
        spending.set()
        budget.spend(10)

    reader = threading.Thread(target=spend)
    with budget.moving_map():
        moving.set()
        reader.start()
        assert spending.wait(timeout=30)
        # A release that did not wait for the move would run now; give it the chance.
        reader.join(timeout=0.5)
        moving.clear()
    reader.join(timeout=30)
    assert not reader.is_alive()
    assert released_while_moving == [False]
