"""The Slurm cluster, started once per test session (only when a test asks for it)."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.adapters.slurm.daemons import SlurmCluster
from tests.adapters.slurm.harness import SlurmFront


@pytest.fixture(scope="session")
def slurm() -> Iterator[SlurmCluster]:
    # Not under pytest's own temporary folder: that one is closed to other accounts,
    # and munged and the jobs (run as `nobody`) need a path open to all.
    root = Path(tempfile.mkdtemp(prefix="costart-slurm-"))
    cluster = SlurmCluster(root)
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def fresh_slurm(slurm: SlurmCluster) -> Iterator[SlurmCluster]:
    """The session's cluster with no job running before or after the test."""
    slurm.cancel_all()
    yield slurm
    slurm.cancel_all()


@pytest.fixture
def front(fresh_slurm: SlurmCluster, tmp_path: Path) -> Iterator[SlurmFront]:
    """`costart serve` and `costart slurm` in front of the fresh cluster."""
    running = SlurmFront(tmp_path, fresh_slurm)
    try:
        yield running
    finally:
        running.close()
