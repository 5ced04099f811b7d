"""A full disk (docs/design.md §6, ADR 0028): a write that meets ENOSPC stops the controller with
a message naming the store and the space needed; nothing acknowledged is lost, nothing
half-written is visible, and the controller starts again once space is freed.

The store lives on a small tmpfs mounted for the test (with a ballast file taking most
of it, deleted to free space). Where mounting is not allowed, the writer runs under
``RLIMIT_FSIZE`` instead: the kernel refuses its writes past a size (EFBIG), which the
store meets exactly as it meets ENOSPC; "freeing space" is then a run without the limit.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from costart.cli.exits import EXIT_NO_SPACE

ROOT = Path(__file__).resolve().parents[2]
FS_BYTES = 4 * 2**20
ROOM_BYTES = 256 * 2**10
"""Free room left beside the ballast: a few dozen groups' worth."""


def _run(args: list[str]) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COSTART_LMDB_HEADROOM": "0"}
    return subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, env=env, check=False, timeout=300
    )


class SmallDisk:
    """Where the store lives and how space runs out and is freed."""

    def __init__(self, root: Path, mounted: bool) -> None:
        self.root = root
        self.mounted = mounted
        self.store = root / "store"
        self.ballast = root / "ballast"

    def writer(
        self, first: int, last: int, *, full: bool, room: int = ROOM_BYTES
    ) -> dict[str, object]:
        args = ["-m", "tests.store.full_disk_writer", str(self.store), str(first), str(last)]
        if full and not self.mounted:
            data = self.store / "data.mdb"
            args.append(str((data.stat().st_size if data.exists() else 0) + room))
        ran = _run(args)
        assert ran.returncode == 0, ran.stderr
        return json.loads(ran.stdout)  # type: ignore[no-any-return]

    def fill(self, room: int = ROOM_BYTES) -> None:
        if self.mounted:
            free = os.statvfs(self.root).f_bavail * os.statvfs(self.root).f_frsize
            with self.ballast.open("wb") as f:
                f.write(b"\0" * max(free - room, 0))

    def free(self) -> None:
        if self.mounted:
            self.ballast.unlink()


@pytest.fixture(params=["small-filesystem", "file-size-limit"])
def disk(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SmallDisk]:
    """A small tmpfs where this process may mount one (else the file-size limit), and
    the file-size limit on its own."""
    mount = tmp_path / "small"
    mount.mkdir()
    mounted = (
        request.param == "small-filesystem"
        and subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={FS_BYTES}", "tmpfs", str(mount)],
            capture_output=True,
            check=False,
        ).returncode
        == 0
    )
    try:
        yield SmallDisk(mount, mounted)
    finally:
        if mounted:
            subprocess.run(["umount", str(mount)], check=False)


def groups_in_log(store: Path) -> list[str]:
    """The groups the log holds, read without writing a byte (the disk may be full)."""
    ran = _run(["-m", "costart.cli.main", "--store", str(store), "replay", "verify"])
    assert ran.returncode == 0, ran.stderr  # checksums and chain: nothing half-written
    ran = _run(["-m", "costart.cli.main", "--store", str(store), "replay", "export"])
    assert ran.returncode == 0, ran.stderr
    events = [json.loads(line)["event"] for line in ran.stdout.splitlines()]
    return [event["spec"]["name"] for event in events if "member_ids" in event]


def get_groups(store: Path) -> subprocess.CompletedProcess[str]:
    return _run(["-m", "costart.cli.main", "--store", str(store), "get", "groups", "-o", "json"])


def test_a_full_disk_stops_the_controller_loses_nothing_and_it_starts_again(disk):
    first = disk.writer(0, 0, full=False)  # the store exists before the disk fills
    assert first["acknowledged"] == ["g-00000"] and first["error"] is None
    disk.fill()
    full = disk.writer(1, 5000, full=True)
    acknowledged = ["g-00000", *full["acknowledged"]]  # type: ignore[misc]
    error = full["error"]
    assert isinstance(error, dict), full
    assert len(acknowledged) > 2, "the disk was full before the test began"
    message = str(error["message"])
    assert f"the store at {disk.store} is out of space" in message
    assert "the write needed about" in message and "bytes more" in message
    assert error["exit_code"] == EXIT_NO_SPACE
    # Every acknowledged group is in the log; the one refused is not, not even in part.
    assert groups_in_log(disk.store) == acknowledged
    if disk.mounted:
        # The views cannot be made on the full disk: said so, never a SIGBUS.
        refused = get_groups(disk.store)
        assert refused.returncode == EXIT_NO_SPACE, refused.stderr
        assert "views is out of space" in refused.stderr
    disk.free()
    again = disk.writer(90000, 90000, full=False)
    assert again == {"acknowledged": ["g-90000"], "error": None}
    assert groups_in_log(disk.store) == [*acknowledged, "g-90000"]
    listed = get_groups(disk.store)
    assert listed.returncode == 0, listed.stderr
    assert [group["name"] for group in json.loads(listed.stdout)] == [*acknowledged, "g-90000"]


def test_a_new_store_on_a_full_disk_is_refused_cleanly_and_made_once_there_is_room(disk):
    """Too little room even for LMDB's lock file: a message, not a SIGBUS, and nothing
    left behind that a later open would take for a store whose data file was lost."""
    disk.fill(room=8 * 2**10)
    refused = disk.writer(0, 0, full=True, room=8 * 2**10)
    error = refused["error"]
    assert refused["acknowledged"] == [] and isinstance(error, dict), refused
    assert f"the store at {disk.store} is out of space" in str(error["message"])
    assert error["exit_code"] == EXIT_NO_SPACE
    disk.free()
    made = disk.writer(0, 0, full=False)
    assert made == {"acknowledged": ["g-00000"], "error": None}
