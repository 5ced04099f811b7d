"""`costart agent`'s command line: what it needs, refused clearly before it starts."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from costart.cli.main import app

runner = CliRunner()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["agent", "--node", "n1"], "needs --server URL and --token TOKEN"),
        (["agent", "--node", "n1", "--server", "http://127.0.0.1:9"], "needs --server"),
        (["agent", "--node", "n1\n", "--server", "http://x", "--token", "t"], "not a node name"),
        (
            ["agent", "--node", "n1", "--server", "http://x", "--token", "t", "--peer-host", "=h"],
            "expected HOST or NODE=HOST",
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


def test_an_agent_that_cannot_reach_its_server_exits_naming_it(tmp_path):
    args = ["agent", "--node", "n1", "--server", "http://127.0.0.1:9", "--token", "t" * 20]
    args += ["--work-dir", str(tmp_path / "work"), "--state-dir", str(tmp_path / "state")]
    args += ["--failover", "0.5"]
    result = runner.invoke(app, args)
    assert result.exit_code == 1, result.output
    assert "cannot reach http://127.0.0.1:9" in result.output


def test_a_state_dir_others_may_enter_is_refused_naming_it(tmp_path):
    (tmp_path / "state").mkdir()
    (tmp_path / "state").chmod(0o755)
    args = ["agent", "--node", "n1", "--server", "http://127.0.0.1:9", "--token", "t" * 20]
    args += ["--work-dir", str(tmp_path / "work"), "--state-dir", str(tmp_path / "state")]
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    assert f"--state-dir {tmp_path / 'state'}" in result.output and "mode 0755" in result.output


def test_a_state_dir_inside_the_work_dir_is_refused(tmp_path):
    state = tmp_path / "work" / ".costart-agent"
    args = ["agent", "--node", "n1", "--server", "http://127.0.0.1:9", "--token", "t" * 20]
    args += ["--work-dir", str(tmp_path / "work"), "--state-dir", str(state)]
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    assert "inside the work directory" in result.output and not state.exists()
