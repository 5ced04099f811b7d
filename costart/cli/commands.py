"""The kubectl-style commands: submit, get, describe, events, why, cancel.

Each command picks a backend from the global options (``--server`` for REST, else
``--store``), runs one call, and prints. Errors become an ``error: ...`` line on stderr
and an exit code from `costart.cli.exits`.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import msgspec
import typer
from rich.console import Console

from costart.bootstrap import DEMO_CLUSTER, Settings
from costart.cli import render
from costart.cli.backend import Backend, LocalBackend, RemoteBackend
from costart.cli.exits import UsageError, reported
from costart.domain.spec import SpecFormat

OutputOption = Annotated[
    render.Output, typer.Option("--output", "-o", help="table | wide | json | yaml")
]


class Target(msgspec.Struct):
    """The global options: where the controller is, and the cluster it places on."""

    store: Path | None = None
    url: str | None = None  # a PostgreSQL store (``--store postgresql://...``)
    server: str | None = None
    token: str | None = None
    ca_file: Path | None = None  # verify --server's TLS certificate against this CA
    cluster: Path | None = DEMO_CLUSTER

    def settings(self) -> Settings:
        """The composition root's settings for the store these options name."""
        store = self.url if self.url is not None else self.store
        return Settings(store=None if store is None else str(store), cluster=self.cluster)


def console() -> Console:
    # Wide enough that scripts piping the table get whole lines.
    return Console(width=max(Console().width, 160), highlight=False)


@contextmanager
def backend(ctx: typer.Context) -> Iterator[Backend]:
    target: Target = ctx.obj
    chosen: Backend
    if target.server:
        chosen = RemoteBackend(target.server, target.token, target.ca_file)
    elif target.url is not None:
        chosen = LocalBackend(target.settings())
    elif target.store is not None:
        target.store.mkdir(parents=True, exist_ok=True)
        chosen = LocalBackend(target.settings())
    else:
        raise UsageError("no controller: pass --store DIR|postgresql://... or --server URL")
    try:
        yield chosen
    finally:
        chosen.close()


get_app = typer.Typer(no_args_is_help=True, help="List groups, members or holds.")
describe_app = typer.Typer(no_args_is_help=True, help="Show one object in detail.")


def submit(ctx: typer.Context, file: Path, output: OutputOption = "table") -> None:
    """Submit a group spec (TOML, or JSON by the .json suffix)."""
    fmt: SpecFormat = "json" if file.suffix == ".json" else "toml"
    with reported(), backend(ctx) as b:
        group = b.submit(file.read_bytes(), fmt)
    if output in ("json", "yaml"):
        render.print_data(console(), group, output)
    else:
        typer.echo(f"group/{group.name} submitted ({group.state})")


@get_app.command("groups")
def get_groups(
    ctx: typer.Context,
    output: OutputOption = "table",
    owner: Annotated[str | None, typer.Option(help="only this owner's groups")] = None,
    state: Annotated[str | None, typer.Option(help="only groups in this state")] = None,
    watch: Annotated[
        bool, typer.Option("--watch", "-w", help="then print each group again as it changes")
    ] = False,
) -> None:
    """Groups in submission order."""
    with reported(), backend(ctx) as b:
        remote = _watchable(b, watch)
        groups = b.groups(owner, state)
        if output in ("json", "yaml"):
            render.print_data(console(), groups, output)
        else:
            now_ns = render.age_reference(groups, time.time_ns())
            console().print(render.groups_table(groups, now_ns, wide=output == "wide"))
        if remote is not None:
            _follow_groups(remote, owner, state, output)


@get_app.command("members")
def get_members(
    ctx: typer.Context,
    group: Annotated[str | None, typer.Argument(help="only this group's members")] = None,
    output: OutputOption = "table",
) -> None:
    """Members with their state, tasks, nodes, claims and restarts."""
    with reported(), backend(ctx) as b:
        members = b.members(group)
    if output in ("json", "yaml"):
        render.print_data(console(), members, output)
    else:
        console().print(render.members_table(members))


@get_app.command("holds")
def get_holds(ctx: typer.Context, output: OutputOption = "table") -> None:
    """Which nodes are held or used by which group and member."""
    with reported(), backend(ctx) as b:
        holds = b.holds()
    if output in ("json", "yaml"):
        render.print_data(console(), holds, output)
    else:
        console().print(render.holds_table(holds))


@describe_app.command("group")
def describe_group(ctx: typer.Context, name: str, output: OutputOption = "table") -> None:
    """Members, holds, the pend reason with its numbers, and recent events."""
    with reported(), backend(ctx) as b:
        detail = b.describe(name)
    if output in ("json", "yaml"):
        render.print_data(console(), detail, output)
    else:
        render.print_describe(
            console(), detail, render.age_reference([detail.group], time.time_ns())
        )


def events(
    ctx: typer.Context,
    name: str,
    output: OutputOption = "table",
    follow: Annotated[
        bool, typer.Option("--follow", "-f", help="then print new events as they happen")
    ] = False,
) -> None:
    """A group's timeline: every event with its controller time."""
    with reported(), backend(ctx) as b:
        remote = _watchable(b, follow)
        timeline = b.events(name)
        origin = timeline[0].at_ns if timeline else 0
        if output in ("json", "yaml"):
            render.print_data(console(), timeline, output)
        else:
            console().print(render.events_table(timeline, origin))
        if remote is not None:
            after = timeline[-1].position if timeline else 0
            for event in remote.watch(after, name):
                if output in ("json", "yaml"):
                    render.print_data(console(), event, output)
                else:
                    typer.echo(render.watch_line(event))


def _watchable(b: Backend, wanted: bool) -> RemoteBackend | None:
    """The backend to watch through, if watching was asked for (needs ``--server``)."""
    if not wanted:
        return None
    if not isinstance(b, RemoteBackend):
        raise UsageError("watching needs --server URL (the watch stream of `costart serve`)")
    return b


def _follow_groups(
    b: RemoteBackend, owner: str | None, state: str | None, output: render.Output
) -> None:
    """Print a group's row again after each event about it (that still matches)."""
    for event in b.watch(None, None):
        if event.group is None:
            continue
        rows = [g for g in b.groups(owner, state) if g.name == event.group]
        for row in rows:
            if output in ("json", "yaml"):
                render.print_data(console(), row, output)
            else:
                typer.echo(render.group_line(row, event))


def scale(
    ctx: typer.Context,
    member: Annotated[str, typer.Argument(help="GROUP/MEMBER of a replica set")],
    replicas: Annotated[int, typer.Option(help="desired replicas")],
) -> None:
    """Scale a replica set: scale-up places single replicas, scale-down stops the highest."""
    group, sep, name = member.partition("/")
    with reported():
        if not sep or not group or not name or "/" in name:
            raise UsageError(f"expected GROUP/MEMBER, got {member!r}")
        with backend(ctx) as b:
            row = b.scale(group, name, replicas)
    typer.echo(f"member/{row.group}/{row.name} scaled to {row.desired} ({row.state})")


def why(ctx: typer.Context, name: str, output: OutputOption = "table") -> None:
    """Why a group is pending: its current reason and every change."""
    with reported(), backend(ctx) as b:
        answer = b.why(name)
    if output in ("json", "yaml"):
        render.print_data(console(), answer, output)
    else:
        render.print_why(console(), answer)


def cancel(ctx: typer.Context, name: str) -> None:
    """Cancel a group: tear down its members and release everything it holds."""
    with reported(), backend(ctx) as b:
        group = b.cancel(name)
    typer.echo(f"group/{group.name} {group.state.lower()}")


def register(app: typer.Typer) -> None:
    app.command()(submit)
    app.add_typer(get_app, name="get")
    app.add_typer(describe_app, name="describe")
    app.command()(events)
    app.command()(why)
    app.command()(cancel)
    app.command()(scale)
