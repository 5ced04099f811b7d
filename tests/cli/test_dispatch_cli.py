"""The CLI's dispatch-path verbs: scale (on a store), token new, and watching that needs
a server. The remote side of scale, ``get groups -w`` and ``events -f`` runs against a
real server in ``tests/rest/test_dispatch_cli_remote.py``."""

from __future__ import annotations

import tomllib

import pytest
from typer.testing import CliRunner

from costart.cli.main import DEMO_SPEC, app
from costart.rest.auth import Tokens

runner = CliRunner()


@pytest.fixture
def store(tmp_path, monkeypatch):
    monkeypatch.setenv("PERSISTENCE_MODULE", "eventsourcing.sqlite")
    monkeypatch.setenv("SQLITE_DBNAME", str(tmp_path / "events.sqlite"))
    return tmp_path / "store"


def costart(store, *args: str):
    return runner.invoke(app, ["--store", str(store), *args])


def test_scale_sets_a_replica_sets_desired_replicas_and_refuses_a_job(store):
    assert costart(store, "submit", "--create", str(DEMO_SPEC)).exit_code == 0
    scaled = costart(store, "scale", "grpo-run-42/rollout", "--replicas", "10")
    assert scaled.exit_code == 0, scaled.output
    assert "member/grpo-run-42/rollout scaled to 10" in scaled.stdout
    job = costart(store, "scale", "grpo-run-42/trainer", "--replicas", "2")
    assert job.exit_code != 0 and "only a replica-set scales" in job.output
    bad = costart(store, "scale", "grpo-run-42", "--replicas", "2")
    assert bad.exit_code == 2 and "GROUP/MEMBER" in bad.output


def test_watching_needs_a_server(store):
    assert costart(store, "submit", "--create", str(DEMO_SPEC)).exit_code == 0
    watched = costart(store, "get", "groups", "-w")
    assert watched.exit_code == 2 and "--server" in watched.output


def test_token_new_prints_a_token_and_a_tokens_file_entry_holding_only_its_hash(tmp_path):
    made = runner.invoke(
        app, ["token", "new", "--user", "agent-7", "--role", "agent", "--node", "n1"]
    )
    assert made.exit_code == 0, made.output
    token = made.stdout.strip().splitlines()[0]
    entry = made.stderr
    assert token not in entry and "sha256:" in entry
    path = tmp_path / "tokens.toml"
    path.write_text(entry)
    assert tomllib.loads(entry)
    user = Tokens.from_toml(path).user_for_token(token)
    assert user.name == "agent-7" and user.role == "agent" and user.nodes == ("n1",)
    refused = runner.invoke(app, ["token", "new", "--user", "x", "--role", "agent"])
    assert refused.exit_code == 2
