"""What each command imports (issue 32, ADR 0078): a command loads what it uses and
nothing else. Each case runs the CLI in a real process and lists ``sys.modules`` as it
exits; no time is measured here (`bench/bench_startup.py` does that)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import typer
from typer.testing import CliRunner

from costart.cli.main import COMMANDS, app
from tests.cli.conftest import ADMIN, DEMO_SPEC, cli_env, run_cli

DUMP = (
    "import atexit, json, sys\n"
    "path = sys.argv.pop(1)\n"
    "atexit.register(lambda: open(path, 'w').write(json.dumps(sorted(sys.modules))))\n"
    "from costart.cli.main import main\n"
    "main()\n"
)
# Never loaded by a command that does not use them.
HEAVY = {
    "costart.placement",
    "costart.sim",
    "costart.agent",
    "costart.server",
    "costart.rest",
    "costart.controller",
    "costart.bootstrap",
    "costart.pgstore",
    "eventsourcing",
    "litestar",
    "pydantic",
    "psycopg",
    "matplotlib",
}
STORE = {"costart.store", "costart.eventlog", "costart.projections.view_queries", "lmdb"}
LOGGING = {"structlog"}
RENDERING = {"rich", "yaml"}


def loaded(tmp_path, *args: str) -> set[str]:
    """The modules a CLI process had loaded when it exited (exit 0 asserted)."""
    out = tmp_path / "modules.json"
    done = subprocess.run(
        [sys.executable, "-c", DUMP, str(out), *args],
        env=cli_env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return set(json.loads(out.read_text()))


def under(modules: set[str], prefixes: set[str]) -> set[str]:
    """The prefixes of which some module (or submodule) is loaded."""
    return {p for p in prefixes if any(m == p or m.startswith(p + ".") for m in modules)}


@pytest.fixture(scope="module")
def local_store(tmp_path_factory):
    store = tmp_path_factory.mktemp("imports") / "store"
    assert run_cli("--store", str(store), "submit", "--create", str(DEMO_SPEC)).returncode == 0
    return store


@pytest.mark.parametrize("args", [["--help"], ["--version"], ["get", "--help"]])
def test_help_and_version_load_no_command(tmp_path, args):
    modules = loaded(tmp_path, *args)
    assert under(modules, HEAVY | STORE | LOGGING | RENDERING | {"httpx"}) == set()
    assert under(modules, {"costart.cli.commands", "costart.cli.sim_cmd"}) == (
        {"costart.cli.commands"} if args[0] == "get" else set()
    )


def test_a_read_over_the_server_loads_no_store_no_framework_no_httpx(tmp_path, live_server):
    modules = loaded(tmp_path, "get", "groups", "--server", live_server, "--token", ADMIN)
    assert under(modules, HEAVY | STORE | LOGGING | RENDERING | {"httpx"}) == set()
    assert {"http.client", "costart.cli.read_client"} <= modules  # it did read the server


def test_a_read_of_a_local_store_loads_no_http_client_and_no_controller(tmp_path, local_store):
    modules = loaded(tmp_path, "get", "groups", "--store", str(local_store))
    # The store's own modules (eventsourcing's recorders, the views' check) it needs.
    needed = {"eventsourcing", "costart.server"}
    assert under(modules, (HEAVY - needed) | {"httpx", "http.client", "uvicorn"}) == set()
    assert under(modules, STORE) == STORE  # it did read the store
    # A read that writes no line loads no logging library (its lines would go through
    # the standard library's handler, `configure_standard_library_only`).
    assert under(modules, LOGGING) == set()


def test_describe_over_the_server_loads_the_renderer_but_no_store(tmp_path, live_server):
    args = ["describe", "group", "group/grpo-run-42", "--server", live_server, "--token", ADMIN]
    modules = loaded(tmp_path, *args)
    assert under(modules, HEAVY | STORE | {"httpx"}) == set()
    assert "rich" in modules


def test_the_listed_help_is_the_help_each_command_generates():
    """`costart --help` lists the commands from the registry without loading them; the
    same help with every command loaded is the same text."""
    printed = CliRunner().invoke(app, ["--help"], prog_name="costart")
    assert printed.exit_code == 0 and "Commands:" in printed.stdout
    group = typer.main.get_command(app)
    ctx = group.make_context("costart", ["get"], resilient_parsing=True, terminal_width=100)
    with ctx:
        lazy = group.get_help(ctx)
    assert [n for n in COMMANDS if f"  {n} " not in lazy] == []
    for name in COMMANDS:
        command = group.get_command(ctx, name)
        assert command is not None
        for limit in (30, 45, 62, 200):
            assert command.get_short_help_str(limit) == group._listed_help(ctx, name, limit), name
        group.commands[name] = command  # listed from the command itself from now on
    with ctx:
        eager = group.get_help(ctx)
    assert lazy == eager
