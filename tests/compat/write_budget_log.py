"""Write the log kept in ``budget_log/``: a group whose restart-member rule gives no
``max_restarts``, written by the release before budgets left out got a default (ADR
0071), replayed by later ones.

``python -m tests.compat.write_budget_log DIR`` submits `SPEC` (a rollout replica set of
8 with ``min_running = 6`` and a restart-member rule without a budget) to a Controller
on LMDB over ``scenarios/cluster-live.toml``, places and starts it, reports one rollout
replica's exit 3, with a snapshot every 4 events, then writes a compacted copy of the
store to DIR. That release recorded ``max_restarts = 0`` for the rule (left out of the
encoding, its default), so the one exit failed the whole group.

The fixture is never re-made: it stands for logs already written in production. This
script is the record of how it was made (run with the release before ADR 0071 on the
import path).
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
CLUSTER = ROOT / "scenarios" / "cluster-live.toml"
GROUP = "rollout-budget"
SPEC = f"""
name = "{GROUP}"
owner = "alice"

[[failure.rules]]
members = ["rollout"]
action = "restart-member"

[[members]]
name = "trainer"
kind = "job"
tasks = 1
shape = {{ cpu = 1 }}

[[members]]
name = "rollout"
kind = "replica-set"
replicas = 8
min_running = 6
shape = {{ cpu = 1 }}
"""


def write(out: Path) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        store = Path(scratch) / "store"
        clock = ManualClock()
        controller = bootstrap(
            Settings(store=str(store), cluster=CLUSTER, env={"COSTART_SNAPSHOT_EVERY": "4"}),
            clock=clock,
        )
        controller.submit(parse_spec(SPEC, "toml"))
        controller.schedule()
        for member in controller.members(GROUP):
            ref = f"{GROUP}/{member.name}"
            for task in member.tasks:
                clock.advance(1)
                controller.task_started(ref, task.index, task.attempt, actor=Actor.agent(task.node))
        clock.advance(60)
        rollout = controller.members(GROUP)[1]
        lost = rollout.tasks[0]
        controller.task_failed(
            f"{GROUP}/rollout",
            lost.index,
            lost.attempt,
            "error",
            exit_code=3,
            actor=Actor.agent(lost.node),
        )
        controller.snapshot_now()
        out.mkdir(parents=True, exist_ok=True)
        controller.recorder.store.env.copy(str(out), compact=True)  # type: ignore[attr-defined]
        controller.close()


if __name__ == "__main__":
    write(Path(sys.argv[1]))
