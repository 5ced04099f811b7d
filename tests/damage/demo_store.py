"""The store the backend-neutral damage tests damage (the ``demo`` fixture, on LMDB and
on PostgreSQL), and the helpers that open, query and alter it."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, NamedTuple

import psycopg
import pytest
from psycopg.rows import dict_row
from rich.console import Console

from costart.bootstrap import Settings, bootstrap
from costart.cli.walkthrough import run_demo
from costart.controller import Controller
from costart.domain.spec import parse_spec
from costart.eventlog.snapshots import encode_world
from tests.builders import USER
from tests.contract.stores import Store
from tests.damage.base_store import TAIL_GROUP

ROOT = Path(__file__).resolve().parents[2]
SNAPSHOT_EVERY = 7
ON_POSTGRESQL = pytest.mark.parametrize("store", ["postgresql"], indirect=True)


class Demo(NamedTuple):
    state: bytes
    """The encoded final state."""
    newest_snapshot: int
    previous_snapshot: int
    end: int


def controller_of(store: Store) -> Controller:
    return bootstrap(Settings(cluster=None), env=store.env)


def closed(controller: Controller) -> None:
    """Close a controller; once the caller drops it too, `gc.collect` lets its recorders
    go, closing the LMDB environment in this process (so the damage can open the files,
    and the next opener checks them)."""
    controller.close()


@pytest.fixture
def demo(store: Store, tmp_path: Path) -> Demo:
    """The demo run with a snapshot every 7 events, then a tail past the newest snapshot."""
    console = Console(file=(tmp_path / "out.txt").open("w"))
    env = {**store.env, "COSTART_SNAPSHOT_EVERY": str(SNAPSHOT_EVERY)}
    controller = run_demo(ROOT / "scenarios" / "rl-post-training.toml", console, env=env)
    controller.submit(parse_spec(TAIL_GROUP, "toml"))
    controller.cancel("tail-probe", actor=USER)
    demo = Demo(
        encode_world(controller.world),
        *controller.session.snapshots_store.positions()[-1:-3:-1],
        controller.world.position,
    )
    closed(controller)
    del controller
    gc.collect()
    assert demo.newest_snapshot < demo.end - 1, demo  # a tail past the newest snapshot
    return demo


def sql(store: Store, statement: str) -> None:
    schema = store.env["POSTGRES_SCHEMA"]
    with psycopg.connect(store.location.split("?")[0]) as conn:
        conn.execute(f'SET search_path TO "{schema}"')
        conn.execute(statement)


def row_of(store: Store, table: str, where: str) -> dict[str, Any]:
    schema = store.env["POSTGRES_SCHEMA"]
    with psycopg.connect(store.location.split("?")[0], row_factory=dict_row) as conn:
        conn.execute(f'SET search_path TO "{schema}"')
        row = conn.execute(f"SELECT * FROM {table} WHERE {where}").fetchone()
    assert row is not None, where
    return row


def set_state(store: Store, table: str, where: str, state: bytes) -> None:
    schema = store.env["POSTGRES_SCHEMA"]
    with psycopg.connect(store.location.split("?")[0]) as conn:
        conn.execute(f'SET search_path TO "{schema}"')
        conn.execute(f"UPDATE {table} SET state = %s WHERE {where}", (state,))


def cli(store: Store, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COSTART_VIEWS_DIR": str(tmp_path / "views"), "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "costart.cli.main", "--store", store.location, *args]
    return subprocess.run(command, env=env, capture_output=True, text=True, check=False)
