"""The command line on a PostgreSQL store: ``--store postgresql://...`` selects it,
commands write through the Controller, and ``costart replay`` reads the log through
connections the server keeps read-only."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from typer.testing import CliRunner

from costart.cli.main import app
from costart.domain.world import World
from costart.eventlog.snapshots import SnapshotStore
from costart.pgstore import READ_ONLY, env_for_url
from costart.pgstore.replay_log import PgReplayLog
from tests.pg_support import fresh_schema

ROOT = Path(__file__).resolve().parents[2]
SPEC = ROOT / "scenarios" / "rl-post-training.toml"


@pytest.fixture
def url(pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    monkeypatch.setenv("COSTART_VIEWS_DIR", str(tmp_path / "views"))
    with fresh_schema(pg_url) as schema_url:
        yield schema_url


def _run(url: str, *args: str) -> str:
    result = CliRunner().invoke(app, ["--store", url, *args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def test_a_postgresql_url_as_store_submits_lists_snapshots_and_verifies(url):
    _run(url, "submit", str(SPEC))
    assert "grpo-run-42" in _run(url, "get", "groups")
    assert "snapshot at position" in _run(url, "snapshot")
    verified = _run(url, "replay", "verify")
    assert "ok:" in verified and "1 snapshots byte-identical" in verified
    assert "views equal to a rebuild" in verified
    assert "GroupSubmitted" in _run(url, "replay", "export")


def test_replay_connections_refuse_writes(url):
    _run(url, "submit", str(SPEC))
    with PgReplayLog(env_for_url(url), url) as log:
        assert log.factory.env.get(READ_ONLY) == "yes"
        with log.factory.datastore.transaction(commit=False) as curs:
            row = curs.execute("SHOW default_transaction_read_only").fetchone()
        assert row is not None and row["default_transaction_read_only"] == "on"
        assert isinstance(log.snapshots, SnapshotStore)
        with pytest.raises(Exception, match="read-only transaction"):
            log.snapshots.write(World())


def test_replay_names_the_first_hole_in_a_postgresql_log(url):
    _run(url, "submit", str(SPEC))
    env = env_for_url(url)
    with psycopg.connect(url.split("?")[0]) as conn:
        conn.execute(
            f'DELETE FROM "{env["POSTGRES_SCHEMA"]}".costart_events WHERE notification_id = 2'
        )
    result = CliRunner().invoke(app, ["--store", url, "replay", "verify"])
    assert result.exit_code == 1
    assert "DIVERGENCE at position 2" in result.output
