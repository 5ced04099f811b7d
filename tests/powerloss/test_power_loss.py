"""Power loss, not just SIGKILL: the store runs on a filesystem that keeps writes in memory
until fsync (`tests.powerloss.lazyfs`), and the power cut throws them away. At ``sync``
durability no acknowledged event is lost; at ``async`` some are (so the test can tell a
synced write from an unsynced one, which a SIGKILL alone cannot: the page cache outlives
the process).

Needs FUSE (``/dev/fuse``, ``fusermount3``, libfuse 3; `scripts/install-fuse.sh`):
skipped, with the reason, only where those are missing."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from costart.controller import Controller
from tests import child_processes

ROOT = Path(__file__).resolve().parents[2]
MOUNT_WITHIN_S = 30.0


def fuse_missing() -> str | None:
    if not os.path.exists("/dev/fuse"):
        return "no /dev/fuse on this machine"
    if shutil.which("fusermount3") is None:
        return "no fusermount3 (install the fuse3 package: scripts/install-fuse.sh)"
    try:
        import mfusepy  # noqa: F401
    except (ImportError, OSError) as error:
        return f"mfusepy cannot load libfuse: {error}"
    return None


pytestmark = pytest.mark.skipif(fuse_missing() is not None, reason=str(fuse_missing()))


class LazyMount:
    """The lazy filesystem mounted over a backing directory, in its own process."""

    def __init__(self, backing: Path, mountpoint: Path) -> None:
        self.mountpoint = mountpoint
        self.process = child_processes.popen(
            [sys.executable, "-m", "tests.powerloss.lazyfs", str(backing), str(mountpoint)],
            cwd=ROOT,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + MOUNT_WITHIN_S
        while not os.path.ismount(mountpoint):
            assert self.process.poll() is None, "the lazy filesystem exited before mounting"
            assert time.monotonic() < deadline, f"not mounted within {MOUNT_WITHIN_S}s"
            time.sleep(0.05)

    def power_cut(self) -> None:
        """Everything not yet synced is gone: the process holding it dies."""
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()
        subprocess.run(["fusermount3", "-u", "-z", str(self.mountpoint)], check=False)


def run_until_cut(tmp_path: Path, durability: str, seconds: float, acks_before_cut: int):
    """Acknowledged group names, and the names in the store after the power cut."""
    backing, mountpoint = tmp_path / "backing", tmp_path / "mnt"
    backing.mkdir()
    mountpoint.mkdir()
    mount = LazyMount(backing, mountpoint)
    try:
        writer = child_processes.popen(
            [sys.executable, "-m", "tests.powerloss.writer", str(mountpoint / "store"),
             durability, str(seconds)],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            text=True,
        )  # fmt: skip
        assert writer.stdout is not None
        acked: list[str] = []
        for line in writer.stdout:
            if line.strip() == "done" or len(acked) >= acks_before_cut:
                break
            if line.startswith("ACK "):
                acked.append(line.split()[1])
        # The machine loses power: the writer and the unsynced writes die together.
        writer.send_signal(signal.SIGKILL)
        writer.wait()
    finally:
        mount.power_cut()
    survived = stored_names(backing / "store")
    return acked, survived


def stored_names(path: Path) -> set[str]:
    if not (path / "data.mdb").exists() or (path / "data.mdb").stat().st_size == 0:
        return set()
    controller = Controller(
        env={"PERSISTENCE_MODULE": "costart.store", "COSTART_LMDB_PATH": str(path)}
    )
    try:
        return {group.name for group in controller.groups()}
    finally:
        controller.close()


def test_at_sync_durability_no_acknowledged_event_is_lost(tmp_path):
    acked, survived = run_until_cut(tmp_path, "sync", seconds=60, acks_before_cut=40)
    assert len(acked) == 40
    assert set(acked) <= survived, f"lost {sorted(set(acked) - survived)}"


def test_at_async_durability_acknowledged_events_are_lost(tmp_path):
    """The async store flushes at most once a second, on a commit: every group acked in
    the first half second is still only in memory when the power goes."""
    acked, survived = run_until_cut(tmp_path, "async", seconds=0.5, acks_before_cut=10_000)
    assert acked, "the writer acknowledged nothing in half a second"
    assert not set(acked) <= survived, "an unsynced write survived the power cut"
