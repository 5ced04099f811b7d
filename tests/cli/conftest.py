"""One real `costart serve` on 127.0.0.1 for the CLI's subprocess tests (started once per
run), with a group submitted through the CLI itself, and how to run the CLI against it."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.rest.serving import serve_env, serving

ROOT = Path(__file__).resolve().parents[2]
ADMIN = "cli-admin-token-0123456789abcdef"
ALICE = "cli-alice-token-0123456789abcdef"
TOKENS = f'[tokens.{ADMIN}]\nuser = "root"\nrole = "admin"\n[tokens.{ALICE}]\nuser = "alice"\n'
DEMO_SPEC = ROOT / "scenarios" / "rl-post-training.toml"


def cli_env(**extra: str) -> dict[str, str]:
    """The environment of a CLI process: this checkout's code, no store from outside."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), **extra}
    for name in ("COSTART_STORE", "COSTART_SERVER", "COSTART_TOKEN", "PERSISTENCE_MODULE"):
        env.pop(name, None)
    return env


def run_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "costart.cli.main", *args],
        env=env or cli_env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.fixture(scope="session")
def live_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The URL of a server (LMDB store, simulated claims) holding ``grpo-run-42``."""
    tmp = tmp_path_factory.mktemp("cli-serve")
    options = ("--interval", "0.1", "--simulate-claims", "--claim-delay", "0.2")
    with serving(tmp, TOKENS, *options, env=serve_env(tmp, lmdb=True)) as (url, _, _):
        submitted = run_cli("submit", str(DEMO_SPEC), "--server", url, "--token", ADMIN)
        assert submitted.returncode == 0, submitted.stderr
        yield url
