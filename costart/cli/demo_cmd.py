"""`costart demo`: the simulated comparison, the walkthrough of one group, or the live
demo of real processes on this machine."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from costart.bootstrap import Settings
from costart.cli.exits import EXIT_USAGE
from costart.cli.live import run_live
from costart.cli.sim_demo import run_sim_demo
from costart.cli.target import Target
from costart.cli.walkthrough import run_demo

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"
DEMO_SPEC = SCENARIOS / "rl-post-training.toml"
DEMO_STORE = Path("var/demo-store")
_DEMO_MARK = ".costart-demo"


def _invoked_as() -> str:
    """How the user ran us (``.venv/bin/costart`` from ``make demo``), for hints."""
    argv0 = sys.argv[0] if sys.argv and sys.argv[0].endswith("costart") else "costart"
    return os.path.relpath(argv0) if os.path.isabs(argv0) else argv0


def prepare_demo_store(store: Path) -> None:
    """An empty store for the demo. Only a store the demo made itself is wiped."""
    if store.exists() and any(store.iterdir()):
        if not (store / _DEMO_MARK).exists():
            typer.echo(f"error: {store} is not empty and not a demo store", err=True)
            raise typer.Exit(EXIT_USAGE)
        shutil.rmtree(store)
    store.mkdir(parents=True, exist_ok=True)
    (store / _DEMO_MARK).write_text("made by `costart demo`; it may wipe this directory\n")


def demo(
    ctx: typer.Context,
    walkthrough: Annotated[
        bool, typer.Option(help="instead: one group step by step, printing every state")
    ] = False,
    spec: Annotated[Path, typer.Option(help="walkthrough: group spec (TOML)")] = DEMO_SPEC,
    live: Annotated[
        bool,
        typer.Option(
            help="instead: serve, one agent per node and an RL group of real processes here"
        ),
    ] = False,
    timeout: Annotated[float, typer.Option(help="live: give up after this many seconds")] = 180,
) -> None:
    """A short simulation of RL post-training runs: costart (atomic, reserve) against
    starting members independently. The reserve run's log goes to ``--store DIR``
    (default ``var/demo-store``, made afresh). ``--live``: real processes instead, on
    this machine (serve, one agent per node, scenarios/live-rl.toml; ADR 0044)."""
    target: Target = ctx.obj
    if live:
        if walkthrough:
            typer.echo("error: --live and --walkthrough are two different demos", err=True)
            raise typer.Exit(EXIT_USAGE)
        raise typer.Exit(run_live(timeout, _invoked_as()))
    if target.store_url is not None:
        typer.echo("error: the demo writes its log to a directory (--store DIR)", err=True)
        raise typer.Exit(EXIT_USAGE)
    store = target.store_dir or DEMO_STORE
    prepare_demo_store(store)
    console = Console(width=max(Console().width, 120))
    # A few snapshots for `replay verify` (unless the environment asks for another interval).
    settings = Settings(
        store=str(store),
        cluster=None,
        env={"COSTART_SNAPSHOT_EVERY": os.environ.get("COSTART_SNAPSHOT_EVERY", "8")},
    )
    if walkthrough:
        run_demo(spec, console, settings)
        group = "grpo-run-42"
    else:
        run_sim_demo(store, store.parent / "demo-report", console)
        group = "grpo-000"
    me = _invoked_as()
    console.print(
        f"The log is in [bold]{store}[/bold]. Try:\n"
        f"  {me} --store {store} get groups -o wide\n"
        f"  {me} --store {store} describe group {group}\n"
        f"  {me} --store {store} replay verify\n"
        f"  {me} --store {store} replay timeline {group} --html timeline.html"
    )
