"""A store on a read-only filesystem (or without write permission): read commands
answer from its log without writing a byte (one warning line says how), writes and
`serve` refuse in one line. Root writes whatever a file's mode, so as root the store is
bind-mounted read-only; elsewhere its files lose their write bits."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from costart.cli.exits import EXIT_ERROR, EXIT_USAGE

ROOT = Path(__file__).resolve().parents[2]
SPEC = ROOT / "scenarios" / "rl-post-training.toml"


def costart(store: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "costart.cli.main", "--store", str(store), *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


def _files(root: Path) -> dict[str, tuple[int, float]]:
    return {str(p): (p.stat().st_size, p.stat().st_mtime) for p in sorted(root.rglob("*"))}


@pytest.fixture(scope="module")
def read_only_store(tmp_path_factory) -> Iterator[Path]:
    work = tmp_path_factory.mktemp("read-only")
    source = work / "source"
    made = costart(source, "submit", "--create", str(SPEC))
    assert made.returncode == 0, made.stderr
    assert costart(source, "get", "groups").returncode == 0  # the views exist too
    if os.geteuid() == 0:
        mount = work / "mounted"
        mount.mkdir()
        subprocess.run(["mount", "--bind", str(source), str(mount)], check=True)
        try:
            subprocess.run(["mount", "-o", "remount,ro,bind", str(mount)], check=True)
            yield mount
        finally:
            subprocess.run(["umount", str(mount)], check=False)
    else:
        for path in [source, *source.rglob("*")]:
            path.chmod(path.stat().st_mode & ~0o222)
        try:
            yield source
        finally:
            for path in [source, *source.rglob("*")]:
                path.chmod(path.stat().st_mode | 0o200)
            shutil.rmtree(source)


def test_reads_answer_from_the_log_and_write_nothing(read_only_store):
    before = _files(read_only_store)
    listed = costart(read_only_store, "get", "groups", "-o", "name")
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout == "group/grpo-run-42\n"
    (warning,) = listed.stderr.splitlines()
    assert warning.startswith(f"warning: the store at {read_only_store} is read-only (")
    described = costart(read_only_store, "describe", "group", "grpo-run-42")
    assert described.returncode == 0 and "Name:       grpo-run-42" in described.stdout
    verified = costart(read_only_store, "replay", "verify")
    assert verified.returncode == 0, verified.stderr
    assert _files(read_only_store) == before


@pytest.mark.parametrize(
    "args", [("submit", str(SPEC)), ("cancel", "grpo-run-42"), ("snapshot",)], ids=str
)
def test_writes_refuse_in_one_line(read_only_store, args):
    done = costart(read_only_store, *args)
    assert done.returncode in (EXIT_USAGE, EXIT_ERROR), done.stderr
    (line,) = done.stderr.splitlines()
    assert line.startswith("error: ") and "read-only" in line, line


def test_serve_refuses_in_one_line(read_only_store, tmp_path):
    tokens = tmp_path / "tokens.toml"
    tokens.write_text('[tokens.alice-token-0123456789]\nuser = "alice"\n')
    done = costart(read_only_store, "serve", "--tokens", str(tokens), "--port", "0")
    assert done.returncode == EXIT_ERROR
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"error: the store at {read_only_store} is read-only (")
    assert line.endswith(
        "serve writes to it; read commands (get, describe, replay) work on it as it is"
    )
