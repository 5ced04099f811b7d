"""Every command, given each kind of bad path where it takes one (a spec, cluster,
scenario or tokens file; a store), answers in one line on stderr with the documented
exit code (`costart.cli.exits`: 2, a usage error) and writes nothing: no traceback, no
store made where none was asked for (ADR 0081)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from costart.cli.exits import EXIT_USAGE
from costart.cli.main import app

ROOT = Path(__file__).resolve().parents[2]
SPEC = ROOT / "scenarios" / "rl-post-training.toml"
runner = CliRunner()


def _missing(tmp: Path) -> Path:
    return tmp / "missing.toml"


def _directory(tmp: Path) -> Path:
    (tmp / "a-directory").mkdir()
    return tmp / "a-directory"


def _beneath_a_file(tmp: Path) -> Path:
    (tmp / "a-file").write_text("")
    return tmp / "a-file" / "x.toml"  # ENOTDIR, for root as for anyone


def _unreadable(tmp: Path) -> Path:
    path = tmp / "unreadable.toml"
    path.write_text('name = "x"\n')
    path.chmod(0)
    return path


FILE_KINDS: dict[str, Callable[[Path], Path]] = {
    "missing": _missing,
    "directory": _directory,
    "beneath-a-file": _beneath_a_file,
}
if os.geteuid() != 0:  # root reads a file whatever its mode
    FILE_KINDS["unreadable"] = _unreadable


def _not_a_store(tmp: Path) -> Path:
    store = tmp / "not-a-store"
    store.mkdir()
    (store / "notes.txt").write_text("someone's files\n")
    return store


def _a_file(tmp: Path) -> Path:
    (tmp / "store-file").write_text("")
    return tmp / "store-file"


STORE_KINDS: dict[str, Callable[[Path], Path]] = {
    "missing": lambda tmp: tmp / "mistyped-store",
    "not-a-store": _not_a_store,
    "a-file": _a_file,
}

# Each command with a bad FILE ("{bad}"); "{tokens}" is a good tokens file.
FILE_COMMANDS = {
    "validate spec": ["validate", "{bad}"],
    "submit spec": ["--store", "{tmp}/store", "submit", "--create", "{bad}"],
    "validate cluster": ["validate", str(SPEC), "--cluster", "{bad}"],
    "submit cluster": ["--cluster", "{bad}", "--store", "{tmp}/s", "submit", "--create", str(SPEC)],
    "serve cluster": ["--cluster", "{bad}", "serve", "--tokens", "{tokens}"],
    "serve tokens": ["serve", "--tokens", "{bad}"],
    "sim scenario": ["sim", "{bad}", "--out", "{tmp}/out"],
}
# Each command with a bad STORE ("{bad}").
STORE_COMMANDS = {
    "submit": ["submit", str(SPEC)],
    "get groups": ["get", "groups"],
    "get members": ["get", "members"],
    "get holds": ["get", "holds"],
    "describe": ["describe", "group", "g"],
    "events": ["events", "g"],
    "why": ["why", "g"],
    "cancel": ["cancel", "g"],
    "scale": ["scale", "g/m", "--replicas", "2"],
    "snapshot": ["snapshot"],
    "replay verify": ["replay", "verify"],
    "replay state": ["replay", "state", "--at", "1m"],
    "replay why": ["replay", "why", "g", "--at", "1m"],
    "replay timeline": ["replay", "timeline", "g"],
    "replay diff": ["replay", "diff", "--from", "1", "--to", "2"],
    "replay export": ["replay", "export"],
    "serve": ["serve", "--tokens", "{tokens}"],
}


def _one_line_usage_error(args: list[str]) -> str:
    result = runner.invoke(app, args)
    assert isinstance(result.exception, SystemExit), result.exception  # not a traceback
    assert result.exit_code == EXIT_USAGE, result.output
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    return lines[0]


def _fill(args: list[str], tmp: Path, bad: Path) -> list[str]:
    tokens = tmp / "tokens.toml"
    tokens.write_text('[tokens.alice-token-0123456789]\nuser = "alice"\n')
    return [a.format(bad=bad, tmp=tmp, tokens=tokens) for a in args]


@pytest.mark.parametrize("kind", FILE_KINDS)
@pytest.mark.parametrize("command", FILE_COMMANDS)
def test_a_file_that_cannot_be_read_is_one_line_naming_it(tmp_path, command, kind):
    bad = FILE_KINDS[kind](tmp_path)
    line = _one_line_usage_error(_fill(FILE_COMMANDS[command], tmp_path, bad))
    assert str(bad) in line and "cannot read" in line
    assert not (tmp_path / "store").exists() and not (tmp_path / "s").exists()


@pytest.mark.parametrize("kind", STORE_KINDS)
@pytest.mark.parametrize("command", STORE_COMMANDS)
def test_a_store_that_is_not_one_is_one_line_and_nothing_is_made(tmp_path, command, kind):
    if command == "serve" and kind == "missing":
        return  # serve starts a new store in a new directory (ADR 0081): tested apart
    bad = STORE_KINDS[kind](tmp_path)
    before = sorted(p.name for p in tmp_path.rglob("*"))
    line = _one_line_usage_error(
        _fill(["--store", str(bad), *STORE_COMMANDS[command]], tmp_path, bad)
    )
    assert f"store {bad}" in line or f"store at {bad}" in line, line
    after = sorted(p.name for p in tmp_path.rglob("*") if p.name != "tokens.toml")
    assert after == [name for name in before if name != "tokens.toml"]  # nothing written


def test_submit_starts_a_store_only_when_asked(tmp_path):
    store = tmp_path / "new-store"
    refused = _one_line_usage_error(["--store", str(store), "submit", str(SPEC)])
    assert "`submit --create` starts a new one" in refused
    assert not store.exists()
    made = runner.invoke(app, ["--store", str(store), "submit", "--create", str(SPEC)])
    assert made.exit_code == 0, made.output
    again = runner.invoke(app, ["--store", str(store), "get", "groups", "-o", "name"])
    assert again.stdout == "group/grpo-run-42\n"
    empty = tmp_path / "empty"
    empty.mkdir()
    assert (
        runner.invoke(app, ["--store", str(empty), "submit", "--create", str(SPEC)]).exit_code == 0
    )
    # Never beside someone's other files, even when asked.
    beside = _not_a_store(tmp_path)
    line = _one_line_usage_error(["--store", str(beside), "submit", "--create", str(SPEC)])
    assert line == f"error: no store at {beside}: the directory holds no controller log; " + (
        "`submit --create` starts one only in a new or empty directory"
    )
    assert sorted(p.name for p in beside.iterdir()) == ["notes.txt"]
