"""The kubectl-style commands: submit, get, describe, events, why, cancel.

Each command picks a backend from the global options (``--server`` for REST, else
``--store``), runs one call, and prints. Errors become an ``error: ...`` line on stderr
and an exit code from `costart.cli.exits`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import msgspec
import typer
from rich.console import Console

from costart.bootstrap import DEMO_CLUSTER, VIEWS_DIR, Settings, build_placement
from costart.cli import render
from costart.cli.backend import Backend, LocalBackend, RemoteBackend
from costart.cli.exits import Unavailable, UsageError, reported
from costart.cli.output import Output, OutputKind, jsonpath, parse_output, sort_rows
from costart.domain.errors import NotFound
from costart.domain.labels import Selector, parse_selector
from costart.domain.spec import SpecFormat, parse_spec_warned
from costart.eventlog.backends import backend_at, backend_for
from costart.eventlog.errors import StoreUnreachableError
from costart.files import read_named_file, why_unreadable
from costart.projections import MemberView

OutputOption = Annotated[
    str,
    typer.Option("--output", "-o", help="table | wide | json | yaml | name | jsonpath=TEMPLATE"),
]


class Target(msgspec.Struct):
    """The global options: where the controller is, and the cluster it places on."""

    store: str | None = None
    """``--store`` as given: the store backend that takes it is the registry's choice
    (ADR 0053), read through `store_dir` and `store_url`."""
    server: str | None = None
    token: str | None = None
    ca_file: Path | None = None  # verify --server's TLS certificate against this CA
    cluster: Path | None = DEMO_CLUSTER
    rebuild_views: bool = False  # rebuild the views even over a log that lost its tail

    def settings(self) -> Settings:
        """The composition root's settings for the store these options name."""
        return Settings(store=self.store, cluster=self.cluster)

    @property
    def store_dir(self) -> Path | None:
        """The store's directory, when its backend keeps the log in one (LMDB)."""
        return self.settings().store_dir

    @property
    def store_url(self) -> str | None:
        """The store's location when it is not a directory (a PostgreSQL URL)."""
        return self.settings().store_url


@contextmanager
def reaching_store(target: Target) -> Iterator[None]:
    """A database store that does not answer is reported as unreachable, named
    without secrets (exit 1), not as the driver's traceback."""
    try:
        yield
    except StoreUnreachableError as error:
        where = target.store and backend_at(target.store).describe(target.store)
        raise Unavailable(f"cannot reach the store {where or ''}: {error}") from None


def console() -> Console:
    # Wide enough that scripts piping the table get whole lines.
    return Console(width=max(Console().width, 160), highlight=False)


def is_empty_directory(path: Path) -> bool:
    """Where a new store may start (ADR 0081): never beside someone's other files."""
    return path.is_dir() and next(path.iterdir(), None) is None


def require_store(target: Target, *, writing: bool = False) -> None:
    """Refuse a store directory that does not exist or holds no LMDB log: a mistyped
    ``--store`` must not read as an empty controller, nor leave a directory behind.
    ``writing``: the hint names ``submit --create``, the one way to start a store."""
    store = target.store_dir
    if store is None:
        return
    hint = "; `submit --create` starts a new one" if writing else ""
    try:
        store.stat()
    except FileNotFoundError:
        pass  # said below
    except OSError as error:
        raise UsageError(f"cannot open store {store}: {why_unreadable(error)}") from None
    if not store.is_dir():
        raise UsageError(f"no store at {store}: no such directory (check --store{hint})")
    backend = backend_for(target.settings().controller_env())
    if backend.data_file is not None and not (store / backend.data_file).is_file():
        lock = backend.lock_file
        if (store / VIEWS_DIR).exists() or (lock is not None and (store / lock).exists()):
            return  # it held a log once: the store's own checks say what was lost (exit 7)
        beside = "; `submit --create` starts one only in a new or empty directory"
        raise UsageError(
            f"no store at {store}: the directory holds no controller log{beside if writing else ''}"
        )


@contextmanager
def backend(ctx: typer.Context, *, create: bool | None = None) -> Iterator[Backend]:
    """The controller the global options name. Only ``create`` (``submit --create``) may
    start a new store directory; every other command needs an existing one (ADR 0081).
    ``create`` False (a submit without it): the refusal says how to start one."""
    target: Target = ctx.obj
    chosen: Backend
    if target.server:
        chosen = RemoteBackend(target.server, target.token, target.ca_file)
    elif target.store_url is not None:
        chosen = LocalBackend(target.settings(), rebuild_views=target.rebuild_views)
    elif target.store_dir is not None:
        store_dir = target.store_dir
        if create and (not store_dir.exists() or is_empty_directory(store_dir)):
            build_placement(target.settings())  # a bad cluster file leaves no store behind
            store_dir.mkdir(parents=True, exist_ok=True)
        else:
            require_store(target, writing=create is not None)
        chosen = LocalBackend(target.settings(), rebuild_views=target.rebuild_views)
    else:
        raise UsageError("no controller: pass --store DIR|postgresql://... or --server URL")
    try:
        with reaching_store(target):
            yield chosen
    finally:
        chosen.close()


def now_ns(b: Backend) -> int:
    """The one point this command measures ages and deadlines to: the wall clock, or on
    a virtual clock (a simulated run's log) its newest event in the whole log."""
    return render.age_reference(b.groups(None, None), time.time_ns())


get_app = typer.Typer(no_args_is_help=True, help="List groups, members or holds.")
describe_app = typer.Typer(no_args_is_help=True, help="Show one object in detail.")
SortOption = Annotated[
    str | None, typer.Option("--sort-by", help="a field to sort by, e.g. .priority")
]


def emit(data: Any, out: Output, table: Callable[[bool], None], names: Sequence[str]) -> None:
    """Print ``data`` as ``-o`` asks: a table (``table(wide)``), JSON, YAML, names, or
    a jsonpath template."""
    if out.kind in ("json", "yaml"):
        render.print_data(console(), data, "json" if out.kind == "json" else "yaml")
    elif out.kind == "name":
        for name in names:
            typer.echo(name)
    elif out.kind == "jsonpath":
        typer.echo(jsonpath(data, out.template or ""))
    else:
        table(out.kind == "wide")


def read_spec_file(file: Path) -> bytes:
    """The bytes of a spec file; `UsageError` naming the file and why it cannot be read
    (missing, a directory, not readable)."""
    return read_named_file(file, "spec file")


def submit(
    ctx: typer.Context,
    file: Path,
    output: OutputOption = "table",
    create: Annotated[
        bool, typer.Option("--create", help="start a new store at --store DIR if none is there")
    ] = False,
) -> None:
    """Submit a group spec (TOML, or JSON by the .json suffix). A ``--store DIR`` must
    hold a store already unless ``--create`` asks for a new one (ADR 0081)."""
    fmt: SpecFormat = "json" if file.suffix == ".json" else "toml"
    with reported():
        out = parse_output(output)
        data = read_spec_file(file)
        with backend(ctx, create=create) as b:
            group = b.submit(data, fmt)
        for warning in parse_spec_warned(data, fmt)[1]:  # accepted: it parses
            typer.echo(f"warning: {warning}", err=True)
        emit(
            group,
            out,
            lambda _: typer.echo(f"group/{group.name} submitted ({group.state})"),
            [f"group/{group.name}"],
        )


@get_app.command("groups")
def get_groups(
    ctx: typer.Context,
    names: Annotated[list[str] | None, typer.Argument(help="only these groups")] = None,
    output: OutputOption = "table",
    owner: Annotated[str | None, typer.Option(help="only this owner's groups")] = None,
    state: Annotated[str | None, typer.Option(help="only groups in this state")] = None,
    selector: Annotated[
        list[str] | None,
        typer.Option("--selector", "-l", help="only groups with these labels (key=value,...)"),
    ] = None,
    show_labels: Annotated[
        bool, typer.Option("--show-labels", help="add each group's labels as a last column")
    ] = False,
    sort_by: SortOption = None,
    watch: Annotated[
        bool, typer.Option("--watch", "-w", help="then print each group again as it changes")
    ] = False,
) -> None:
    """Groups in submission order (or --sort-by a field); NAME... picks some; -w follows."""
    with reported():
        out = parse_output(output)
        with backend(ctx) as b:
            remote = _watchable(b, watch)
            labels = parse_selector(selector or ())
            groups = b.groups(owner, state, labels)
            now = now_ns(b)
            if names:
                by_name = {g.name: g for g in groups}
                missing = [n for n in names if n not in by_name]
                if missing:
                    raise NotFound(f"no group named {', '.join(map(repr, missing))}")
                groups = [by_name[n] for n in dict.fromkeys(names)]
            if sort_by:
                groups = sort_rows(groups, sort_by)
            emit(
                groups,
                out,
                lambda wide: console().print(
                    render.groups_table(groups, now, wide=wide, show_labels=show_labels)
                ),
                [f"group/{g.name}" for g in groups],
            )
            if remote is not None:
                _follow_groups(remote, owner, state, labels, out.kind)


@get_app.command("members")
def get_members(
    ctx: typer.Context,
    group: Annotated[str | None, typer.Argument(help="only this group's members")] = None,
    output: OutputOption = "table",
    sort_by: SortOption = None,
) -> None:
    """Members with their state, tasks, nodes, claims and restarts."""
    with reported():
        out = parse_output(output)
        with backend(ctx) as b:
            members = b.members(group)
        if sort_by:
            members = sort_rows(members, sort_by)
        emit(
            members,
            out,
            lambda _: console().print(render.members_table(members)),
            [f"member/{m.group}/{m.name}" for m in members],
        )


@get_app.command("holds")
def get_holds(
    ctx: typer.Context, output: OutputOption = "table", sort_by: SortOption = None
) -> None:
    """Which nodes are held or used by which group and member."""
    with reported():
        out = parse_output(output)
        with backend(ctx) as b:
            holds = b.holds()
        if sort_by:
            holds = sort_rows(holds, sort_by)
        emit(
            holds,
            out,
            lambda _: console().print(render.holds_table(holds)),
            [f"hold/{h.node}/{h.group}/{h.member}/{h.index}" for h in holds],
        )


@describe_app.command("group")
def describe_group(ctx: typer.Context, name: str, output: OutputOption = "table") -> None:
    """Members, holds, the pend reason with its numbers, and recent events."""
    with reported():
        out = parse_output(output)
        with backend(ctx) as b:
            detail = b.describe(name)
            now = now_ns(b)
        emit(
            detail,
            out,
            lambda _: render.print_describe(console(), detail, now),
            [f"group/{detail.group.name}"],
        )


@describe_app.command("member")
def describe_member(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="GROUP/MEMBER")],
    output: OutputOption = "table",
) -> None:
    """One member: state, tasks and nodes, claims, restarts, its times and reason."""
    with reported():
        out = parse_output(output)
        group, sep, member = name.partition("/")
        if not (sep and group and member) or "/" in member:
            raise UsageError(f"bad member {name!r}: write GROUP/MEMBER")
        with backend(ctx) as b:
            detail = b.describe(group)
            now = now_ns(b)
        found = next((m for m in detail.members if m.name == member), None)
        if found is None:
            raise NotFound(f"group {group!r} has no member named {member!r}")
        chosen: MemberView = found
        emit(
            chosen,
            out,
            lambda _: render.print_member(console(), chosen, now),
            [f"member/{group}/{member}"],
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
    with reported():
        out = parse_output(output)
        with backend(ctx) as b:
            remote = _watchable(b, follow)
            timeline = b.events(name)
            origin = timeline[0].at_ns if timeline else 0
            emit(
                timeline,
                out,
                lambda _: console().print(render.events_table(timeline, origin)),
                [f"event/{name}/{e.position}" for e in timeline],
            )
            if remote is not None:
                after = timeline[-1].position if timeline else 0
                for event in remote.watch(after, name):
                    if out.kind in ("json", "yaml"):
                        render.print_data(console(), event, out.kind)
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
    b: RemoteBackend,
    owner: str | None,
    state: str | None,
    labels: Selector,
    output: OutputKind,
) -> None:
    """Print a group's row again after each event about it (that still matches)."""
    for event in b.watch(None, None):
        if event.group is None:
            continue
        rows = [g for g in b.groups(owner, state, labels) if g.name == event.group]
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
    with reported():
        out = parse_output(output)
        with backend(ctx) as b:
            answer = b.why(name)
            now = now_ns(b)
        emit(
            answer,
            out,
            lambda _: render.print_why(console(), answer, now),
            [f"group/{answer.group}"],
        )


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
