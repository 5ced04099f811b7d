"""Write the log kept in ``release_log/``: a store written by a release, replayed by later ones.

``python -m tests.compat.write_release_log DIR`` drives the Controller on LMDB through
the multi-group story (reservations, placement, claims, starts, a failure and a restart,
a cancel, node reports) and the rl-post-training demo (a whole group to success), with a
snapshot every 8 events, then writes a compacted copy of the store to DIR.

The fixture is never re-made: it stands for logs already written in production. This
script is the record of how it was made: run at the commit that added the fixture it
writes that release's log; run today, it writes the current release's.
"""

from __future__ import annotations

import sys
import tempfile
from io import StringIO
from pathlib import Path

from rich.console import Console

from costart.cli.walkthrough import run_demo
from costart.controller import Controller
from tests.builders import ManualClock
from tests.multi_group_story import run_story

ROOT = Path(__file__).resolve().parents[2]


def write(out: Path) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        env = {
            "PERSISTENCE_MODULE": "costart.store",
            "COSTART_LMDB_PATH": str(Path(scratch) / "store"),
            "COSTART_SNAPSHOT_EVERY": "8",
        }
        clock = ManualClock()
        controller = Controller(env=env, clock=clock)
        run_story(controller, clock)
        controller.close()
        demo = run_demo(
            ROOT / "scenarios" / "rl-post-training.toml", Console(file=StringIO()), env=env
        )
        out.mkdir(parents=True, exist_ok=True)
        demo.recorder.store.env.copy(str(out), compact=True)  # type: ignore[attr-defined]
        demo.close()


if __name__ == "__main__":
    write(Path(sys.argv[1]))
