"""`costart agent`'s command line: what it needs, refused clearly before it starts.

A command line that gets as far as the token scrubs the process's environment and
makes it non-dumpable (`costart.agent.credentials`), so those cases run the agent as a
child process rather than inside the test runner.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from costart.cli.main import app
from tests.agent.harness import child_env

runner = CliRunner()
UNREACHABLE = "http://127.0.0.1:9"
TOKEN = "agent-token-" + "t" * 20


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["agent", "--node", "n1"], "needs --server URL"),
        (["agent", "--node", "n1\n", "--server", "http://x"], "not a node name"),
        (
            ["agent", "--node", "n1", "--server", "http://x", "--peer-host", "=h"],
            "expected HOST or NODE=HOST",
        ),
        (
            ["agent", "--node", "n1", "--server", "http://x", "--token", TOKEN],
            "does not take --token or COSTART_TOKEN",
        ),
        (
            ["--token", TOKEN, "agent", "--node", "n1", "--server", "http://x"],
            "does not take --token or COSTART_TOKEN",
        ),
    ],
)
def test_a_bad_agent_command_line_exits_with_a_usage_error(args, message, monkeypatch):
    monkeypatch.delenv("COSTART_SERVER", raising=False)
    monkeypatch.delenv("COSTART_TOKEN", raising=False)
    monkeypatch.delenv("COSTART_AGENT_TOKEN", raising=False)
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    assert message in result.output


def test_a_token_on_the_command_line_is_refused_naming_the_safe_ways(monkeypatch):
    monkeypatch.delenv("COSTART_AGENT_TOKEN", raising=False)
    monkeypatch.setenv("COSTART_TOKEN", TOKEN)  # the global --token's variable
    result = runner.invoke(app, ["agent", "--node", "n1", "--server", "http://x"])
    assert result.exit_code == 2, result.output
    assert "--token-file PATH" in result.output
    assert "COSTART_AGENT_TOKEN" in result.output


def agent(
    tmp_path: Path, *args: str, token: str | None = TOKEN, state: bool = True
) -> subprocess.CompletedProcess[str]:
    """`costart agent` for node n1 against a server that never answers, as a child."""
    argv = [sys.executable, "-m", "costart.cli.main", "agent", "--node", "n1"]
    argv += ["--server", UNREACHABLE, "--work-dir", str(tmp_path / "work"), "--failover", "0.5"]
    if state:
        argv += ["--state-dir", str(tmp_path / "state")]
    env = child_env()
    if token is not None:
        env["COSTART_AGENT_TOKEN"] = token
    (tmp_path / "work").mkdir(exist_ok=True)
    return subprocess.run(
        [*argv, *args], check=False, env=env, capture_output=True, text=True, timeout=60
    )


def test_an_agent_that_cannot_reach_its_server_exits_naming_it(tmp_path):
    result = agent(tmp_path)
    assert result.returncode == 1, result.stderr
    assert "cannot reach http://127.0.0.1:9" in result.stderr


def test_an_agent_without_a_token_names_the_safe_ways(tmp_path):
    result = agent(tmp_path, token=None)
    assert result.returncode == 2, result.stderr
    assert "needs a token" in result.stderr and "--token-file PATH" in result.stderr


def test_a_token_file_only_its_owner_may_read_is_taken(tmp_path):
    path = tmp_path / "agent.token"
    path.write_text(TOKEN + "\n")
    path.chmod(0o600)
    result = agent(tmp_path, "--token-file", str(path), token=None)
    assert result.returncode == 1, result.stderr  # it got as far as the server
    assert "cannot reach" in result.stderr


def test_a_token_file_others_may_read_is_refused_naming_it_and_its_mode(tmp_path):
    path = tmp_path / "agent.token"
    path.write_text(TOKEN)
    path.chmod(0o644)
    result = agent(tmp_path, "--token-file", str(path), token=None)
    assert result.returncode == 2, result.stderr
    assert f"--token-file {path}" in result.stderr and "mode 0644" in result.stderr


def test_a_token_file_and_the_environment_variable_at_once_are_refused(tmp_path):
    path = tmp_path / "agent.token"
    path.write_text(TOKEN)
    path.chmod(0o600)
    result = agent(tmp_path, "--token-file", str(path))
    assert result.returncode == 2, result.stderr
    assert "give one" in result.stderr


def test_a_state_dir_others_may_enter_is_refused_naming_it(tmp_path):
    (tmp_path / "state").mkdir(mode=0o755)
    os.chmod(tmp_path / "state", 0o755)  # whatever the umask
    result = agent(tmp_path)
    assert result.returncode == 2, result.stderr
    assert f"--state-dir {tmp_path / 'state'}" in result.stderr
    assert "mode 0755" in result.stderr


def test_a_state_dir_inside_the_work_dir_is_refused(tmp_path):
    result = agent(tmp_path, "--state-dir", str(tmp_path / "work" / ".costart-agent"), state=False)
    assert result.returncode == 2, result.stderr
    assert "inside the work directory" in result.stderr
    assert not (tmp_path / "work" / ".costart-agent").exists()
