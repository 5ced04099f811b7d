"""The entry of `costart demo --live`: where the run lives and what it prints at the end."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from rich.console import Console

from costart.cli.exits import EXIT_ERROR, EXIT_USAGE
from costart.cli.live.processes import MARKER
from costart.cli.live.run import LiveOptions, new_run_marker, run_live_demo

REPOSITORY = Path(__file__).resolve().parents[3]
LIVE_SPEC = REPOSITORY / "scenarios" / "live-rl.toml"
LIVE_CLUSTER = REPOSITORY / "scenarios" / "cluster-live.toml"


def run_live(timeout_s: float, me: str = "costart") -> int:
    """Run the live demo in a fresh directory (kept: its store, logs and task logs);
    the exit code. ``me`` is how the user runs `costart` (for the hints at the end).
    ``COSTART_DEMO_RUN`` in the environment names the run (every process
    it starts carries it; a test finds them by it), else a random name is drawn."""
    console = Console(width=max(Console().width, 120))
    if not timeout_s > 0:
        console.print(f"error: --timeout must be longer than 0 seconds (got {timeout_s})")
        return EXIT_USAGE
    for needed in (LIVE_SPEC, LIVE_CLUSTER):
        if not needed.is_file():
            console.print(f"error: {needed}: missing (the live demo runs from a checkout)")
            return EXIT_USAGE
    run_dir = Path(tempfile.mkdtemp(prefix="costart-live-"))
    options = LiveOptions(
        spec=LIVE_SPEC,
        cluster=LIVE_CLUSTER,
        repository=REPOSITORY,
        run_dir=run_dir,
        run=os.environ.get(MARKER) or new_run_marker(),
        timeout_s=timeout_s,
    )
    console.print(f"live demo run {options.run} in {run_dir}", highlight=False)
    ok = run_live_demo(options, console)
    store = run_dir / "store"
    console.print(
        f"The log is in {store}; the task logs in {run_dir / 'task-logs'}. Try:\n"
        f"  {me} --store {store} get groups -o wide\n"
        f"  {me} --store {store} replay verify\n"
        f"  {me} --store {store} replay timeline rl-live --html timeline.html",
        highlight=False,
    )
    return 0 if ok else EXIT_ERROR
