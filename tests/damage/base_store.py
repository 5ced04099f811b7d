"""The store the damage suite damages: the RL post-training demo run to its end (one
group, SUCCEEDED), with a snapshot every 5 events, then a small group submitted and
cancelled (a tail of events after the newest snapshot), and views built by ``costart
get``. What the host last saw of it (`Controller.last_known`) is kept beside it.

``python -m tests.damage.base_store DIR`` builds it in DIR (in a child process, so the
test process holds no LMDB environment of a store it then copies and damages).
`cut_log` turns a copy into an older backup of the same history.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import lmdb
import msgspec
from rich.console import Console

from costart.bootstrap import Settings
from costart.cli.backend import LocalBackend
from costart.cli.walkthrough import run_demo
from costart.domain.spec import parse_spec
from costart.eventlog.replay_log import EVENTS_LOG, SNAPSHOTS_LOG
from costart.store.lmdbenv import index_db_name, log_db_name
from costart.store.record_layout import unpack_u64
from tests.builders import USER

ROOT = Path(__file__).resolve().parents[2]
GROUP = "grpo-run-42"
SNAPSHOT_EVERY = 5
TAIL_GROUP = """
name = "tail-probe"
owner = "bob"
[[members]]
name = "worker"
kind = "job"
shape = { cpu = 1 }
"""


def build(store: Path) -> None:
    settings = Settings(
        store=str(store), cluster=None, env={"COSTART_SNAPSHOT_EVERY": str(SNAPSHOT_EVERY)}
    )
    with (store.parent / f"{store.name}-demo.txt").open("w") as out:
        spec = ROOT / "scenarios" / "rl-post-training.toml"
        controller = run_demo(spec, Console(file=out), settings)
    controller.submit(parse_spec(TAIL_GROUP, "toml"))
    controller.cancel("tail-probe", actor=USER)
    # The host's truth (ADR 0048), kept outside the store as a host keeps it.
    last_known_path(store).write_bytes(msgspec.json.encode(controller.last_known()))
    controller.close()
    backend = LocalBackend(Settings(store=str(store), cluster=None))
    try:
        backend.groups(None, None)  # builds the views
    finally:
        backend.close()


def build_views(store: Path) -> None:
    """Build the store's views with ``costart get`` in a child process (so this process
    holds no LMDB environment of the store)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    args = [sys.executable, "-m", "costart.cli.main", "--store", str(store), "get", "groups"]
    built = subprocess.run(args, env=env, capture_output=True, text=True, check=False)
    if built.returncode != 0:
        raise RuntimeError(f"building the views of {store} failed: {built.stderr}")


def last_known_path(store: Path) -> Path:
    """Where `build` keeps what the host last saw of the store: beside it, not in it."""
    return store.parent / f"{store.name}-last-known.json"


def _cut(txn: lmdb.Transaction[bytes], records: object, index: object, keep: int) -> None:
    """Delete the records after ``keep`` (by position) and their index entries."""
    doomed = [
        (key, value)
        for key, value in txn.cursor(db=index)  # type: ignore[call-overload]
        if unpack_u64(value)[0] > keep
    ]
    for key, value in doomed:
        txn.delete(key, db=index)
        txn.delete(value, db=records)


def cut_log(store: Path, keep: int) -> None:
    """The log as an older copy of the same history: events after ``keep`` gone, with
    every snapshot taken after it (a consistent, shorter store; LMDB writes it whole)."""
    env = lmdb.open(str(store), max_dbs=64)
    try:
        with env.begin(write=True) as txn:
            for log in (EVENTS_LOG, SNAPSHOTS_LOG):
                records = env.open_db(log_db_name(log), txn=txn, create=False)
                index = env.open_db(index_db_name(log), txn=txn, create=False)
                limit = keep
                if log == SNAPSHOTS_LOG:
                    # Snapshots have ids of their own log: keep those taken up to `keep`.
                    limit = sum(
                        1
                        for key in txn.cursor(db=index).iternext(values=False)
                        if unpack_u64(key[-8:])[0] <= keep
                    )
                _cut(txn, records, index, limit)
    finally:
        env.close()


if __name__ == "__main__":
    build(Path(sys.argv[1]))
