"""`costart slurm`'s command line: what it needs, refused with one line and exit 2
before anything reaches Slurm or the server."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from costart.cli.exits import EXIT_USAGE
from costart.cli.main import app

runner = CliRunner()
TOKEN = "agent-token-" + "t" * 20


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--node", "n1"], "needs --server URL"),
        (["--node", "n1\n", "--server", "http://x"], "not a node name"),
    ],
)
def test_refused_command_lines(tmp_path: Path, args: list[str], message: str) -> None:
    done = runner.invoke(app, ["slurm", "--state-dir", str(tmp_path), *args])
    assert done.exit_code == EXIT_USAGE, done.output
    assert message in done.output


def test_a_bad_accounts_file_is_named(tmp_path: Path) -> None:
    accounts = tmp_path / "accounts.toml"
    accounts.write_text("[owners.alice]\nuid = 1\nuser = 'x'\n")
    done = runner.invoke(
        app,
        ["slurm", "--state-dir", str(tmp_path), "--node", "n1", "--server", "http://x",
         "--accounts", str(accounts)],
    )  # fmt: skip
    assert done.exit_code == EXIT_USAGE, done.output
    assert "owners.alice: set exactly one of uid, user, agent" in done.output
