"""Write the log kept in ``run_table_log/``: groups with run tables, written by the
release before a run table could name secrets (``env_secrets``), replayed by later ones.

``python -m tests.compat.write_run_table_log DIR`` submits ``scenarios/live-rl.toml``
(run tables with ``env``, ``cwd``, ``port``, ``file`` probes) to a Controller on LMDB,
places it, makes its claims READY and starts it, with a snapshot every 4 events, then
writes a compacted copy of the store to DIR.

The fixture is never re-made: it stands for logs already written in production. This
script is the record of how it was made.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from costart import Settings, parse_spec
from costart.bootstrap import bootstrap
from costart.domain import Actor
from tests.builders import ManualClock

ROOT = Path(__file__).resolve().parents[2]
SPEC = ROOT / "scenarios" / "live-rl.toml"
CLUSTER = ROOT / "scenarios" / "cluster-live.toml"


def write(out: Path) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        store = Path(scratch) / "store"
        clock = ManualClock()
        controller = bootstrap(
            Settings(store=str(store), cluster=CLUSTER, env={"COSTART_SNAPSHOT_EVERY": "4"}),
            clock=clock,
        )
        controller.submit(parse_spec(SPEC.read_bytes(), "toml"))
        controller.schedule()
        host = Actor.host("release-writer")
        for member in controller.members("rl-live"):
            ref = f"rl-live/{member.name}"
            controller.claim_ready(ref, "weights", member.attempt, actor=host)
        controller.schedule()
        for member in controller.members("rl-live"):
            ref = f"rl-live/{member.name}"
            for task in member.tasks:
                controller.task_started(ref, task.index, task.attempt, actor=Actor.agent(task.node))
        controller.snapshot_now()
        out.mkdir(parents=True, exist_ok=True)
        controller.recorder.store.env.copy(str(out), compact=True)  # type: ignore[attr-defined]
        controller.close()


if __name__ == "__main__":
    write(Path(sys.argv[1]))
