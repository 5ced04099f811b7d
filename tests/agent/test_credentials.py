"""The agent's token: from a file only its account may read, or from an environment
variable it scrubs so that neither ``/proc/PID/environ`` nor a process of its own
account reads it back (`costart.agent.credentials`, docs/design.md §11)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from costart.agent.credentials import TokenRefused, read_token_file
from tests.agent.harness import child_env
from tests.agent.root import require_root

TOKEN = "agent-token-0123456789abcdef"
OTHER = "user-token-fedcba9876543210"


def token_file(tmp_path: Path, mode: int, text: str = TOKEN + "\n") -> Path:
    path = tmp_path / "agent.token"
    path.write_text(text)
    path.chmod(mode)
    return path


def test_a_token_file_only_its_owner_may_read_gives_its_one_token(tmp_path):
    assert read_token_file(token_file(tmp_path, 0o600)) == TOKEN
    assert read_token_file(token_file(tmp_path, 0o400)) == TOKEN


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604, 0o620, 0o602, 0o660])
def test_a_token_file_with_any_group_or_other_bit_is_refused_naming_it_and_its_mode(tmp_path, mode):
    path = token_file(tmp_path, mode)
    with pytest.raises(TokenRefused, match=f"--token-file {path}: .*mode {mode:04o}"):
        read_token_file(path)


def test_a_token_file_of_another_account_is_refused(tmp_path):
    require_root()  # giving it away
    path = token_file(tmp_path, 0o600)
    os.chown(path, 65534, 65534)
    with pytest.raises(TokenRefused, match="owned by another account"):
        read_token_file(path)


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda p: p.mkdir(mode=0o700), "not a regular file"),
        (lambda p: os.mkfifo(p, 0o600), "not a regular file"),
        (lambda p: None, "cannot open it"),
        (lambda p: (p.write_text("\n"), p.chmod(0o600)), "expected one token"),
        (lambda p: (p.write_text("a b"), p.chmod(0o600)), "expected one token"),
        (lambda p: (p.write_text("a" * 5000), p.chmod(0o600)), "longer than 4096 bytes"),
    ],
    ids=["directory", "fifo", "missing", "empty", "two-words", "too-long"],
)
def test_what_is_not_one_token_in_a_private_file_is_refused(tmp_path, make, message):
    path = tmp_path / "agent.token"
    make(path)
    with pytest.raises(TokenRefused, match=message):
        read_token_file(path)


# A child that takes its token from the environment, says so, and waits to be read.
SCRUBBING_CHILD = textwrap.dedent(
    """
    import ctypes, os, sys
    from costart.agent.credentials import take_environment_token
    token = take_environment_token()
    dumpable = ctypes.CDLL(None).prctl(3, 0, 0, 0, 0)  # PR_GET_DUMPABLE
    gone = all(name not in os.environ for name in ("COSTART_AGENT_TOKEN", "COSTART_TOKEN"))
    print(token, dumpable, gone, flush=True)
    sys.stdin.read()
    """
)


def test_the_environment_token_is_taken_then_gone_from_proc_environ_and_the_process_undumpable():
    env = {**child_env(), "COSTART_AGENT_TOKEN": TOKEN, "COSTART_TOKEN": OTHER}
    child = subprocess.Popen(
        [sys.executable, "-c", SCRUBBING_CHILD],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline().split() == [TOKEN, "0", "True"]
        environ_path = Path(f"/proc/{child.pid}/environ")
        if os.geteuid() != 0:  # a non-dumpable process's environment is root's alone
            with pytest.raises(PermissionError):
                environ_path.read_bytes()
            return
        environ = environ_path.read_bytes()
        assert b"COSTART_AGENT_TOKEN=" in environ  # the same block, read after the scrub
        assert TOKEN.encode() not in environ and OTHER.encode() not in environ
    finally:
        child.communicate("", timeout=30)
