"""The kubectl-style commands: submit, get, describe, events, why, cancel, scale.

Each command picks a backend from the global options (``--server`` for REST, else
``--store``), runs one call, and prints. Errors become an ``error: ...`` line on stderr
and an exit code from `costart.cli.exits`. What only some commands need (the store, the
rich renderer, spec parsing) is imported by those commands (ADR 0078): ``get`` over
``--server`` loads the views' rows and the standard library's HTTP, nothing more.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from costart.cli.completion import complete_group, complete_member
from costart.cli.exits import Unavailable, UsageError, reported
from costart.cli.names import group_name, member_name
from costart.cli.output import Output, jsonpath, parse_output, sort_rows
from costart.cli.target import Target
from costart.files import read_named_file, why_unreadable

if TYPE_CHECKING:
    from costart.cli.backend import Backend, RemoteBackend
    from costart.cli.listing import Listing
    from costart.domain.label_selectors import Requirement
    from costart.projections.models import GroupView, MemberView, TimelineEntry

__all__ = ["Target", "console", "reaching_store", "read_spec_file", "require_store"]

OutputOption = Annotated[
    str,
    typer.Option(
        "--output",
        "-o",
        help="table | wide | json | yaml | name | jsonpath=TEMPLATE | custom-columns=H:.path,...",
    ),
]
NoHeadersOption = Annotated[
    bool, typer.Option("--no-headers", help="tables: print the rows without the header line")
]
SelectorOption = Annotated[
    list[str] | None,
    typer.Option(
        "--selector",
        "-l",
        help="only groups whose labels match: key=value, key!=value, key in (a,b), "
        "key notin (a,b), key, !key (comma-separated: all must hold)",
    ),
]
GroupArgument = Annotated[
    str, typer.Argument(help="NAME or group/NAME", autocompletion=complete_group)
]
MemberArgument = Annotated[
    str,
    typer.Argument(help="GROUP/MEMBER or member/GROUP/MEMBER", autocompletion=complete_member),
]
# --sort-by a column (as the table heads it) or a field of the rows.
GROUP_SORT_COLUMNS = {
    "NAME": ".name",
    "OWNER": ".owner",
    "STATE": ".state",
    "ATTEMPT": ".attempt",
    "AGE": ".submitted_at_ns",  # oldest first
    "PRIORITY": ".priority",
    "MODE": ".mode",
    "TASKS": ".tasks_placed",
    "HELD": ".tasks_held",
    "GPU": ".gpu_placed",
}
MEMBER_SORT_COLUMNS = {
    "GROUP": ".group",
    "MEMBER": ".name",
    "KIND": ".kind",
    "OWNER": ".owner",
    "PROFILE": ".profile",
    "STATE": ".state",
    "TASKS": ".placed",
    "RUNNING": ".running",
    "RESTARTS": ".restarts",
}
HOLD_SORT_COLUMNS = {
    "NODE": ".node",
    "GROUP": ".group",
    "MEMBER": ".member",
    "TASK": ".index",
    "KIND": ".kind",
    "GPU": ".gpu",
    "RUNNING": ".running",
}


@contextmanager
def reaching_store(target: Target) -> Iterator[None]:
    """A database store that does not answer is reported as unreachable, named
    without secrets (exit 1), not as the driver's traceback."""
    if target.store is None:  # a server answers for its own store
        yield
        return
    from costart.eventlog.errors import StoreUnreachableError  # noqa: PLC0415

    try:
        yield
    except StoreUnreachableError as error:
        from costart.eventlog.backends import backend_at  # noqa: PLC0415

        where = target.store and backend_at(target.store).describe(target.store)
        raise Unavailable(f"cannot reach the store {where or ''}: {error}") from None


def console() -> Any:
    """A rich console wide enough that scripts piping its output get whole lines."""
    from rich.console import Console  # noqa: PLC0415  (only the detailed views use it)

    return Console(width=max(Console().width, 160), highlight=False)


def is_empty_directory(path: Path) -> bool:
    """Where a new store may start (ADR 0081): never beside someone's other files."""
    return path.is_dir() and next(path.iterdir(), None) is None


def require_store(target: Target, *, writing: bool = False) -> None:
    """Refuse a store directory that does not exist or holds no LMDB log: a mistyped
    ``--store`` must not read as an empty controller, nor leave a directory behind.
    ``writing``: the hint names ``submit --create``, the one way to start a store."""
    from costart.eventlog.backends import backend_for  # noqa: PLC0415
    from costart.settings import VIEWS_DIR  # noqa: PLC0415

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
        from costart.cli.backend import RemoteBackend  # noqa: PLC0415

        chosen = RemoteBackend(target.server, target.token, target.ca_file)
    elif target.store is not None:
        from costart.cli.backend import LocalBackend  # noqa: PLC0415

        target.log_setup()
        store_dir = target.store_dir
        if store_dir is not None:
            if create and (not store_dir.exists() or is_empty_directory(store_dir)):
                from costart.bootstrap import build_placement  # noqa: PLC0415

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
    from costart.cli import rows  # noqa: PLC0415

    return rows.age_reference(b.groups(None, None), time.time_ns())


get_app = typer.Typer(
    no_args_is_help=True, rich_markup_mode=None, help="List groups, members or holds."
)
describe_app = typer.Typer(
    no_args_is_help=True, rich_markup_mode=None, help="Show one object in detail."
)
SortOption = Annotated[
    str | None,
    typer.Option("--sort-by", help="a column (AGE, STATE...) or a field (.priority) to sort by"),
]


def emit(data: Any, out: Output, table: Callable[[bool], None], names: Sequence[str]) -> None:
    """Print one object (or a few lines about it) as ``-o`` asks: its text form
    (``table(wide)``), JSON, YAML, its name, or a jsonpath template."""
    from costart.cli.listing import Listing, print_data  # noqa: PLC0415

    if out.kind in ("json", "yaml"):
        print_data(data, out.kind)
    elif out.kind == "name":
        for name in names:
            typer.echo(name)
    elif out.kind == "jsonpath":
        typer.echo(jsonpath(data, out.template or ""))
    elif out.kind == "custom-columns":
        Listing(out, [], lambda _: [], lambda _: "").print([data])
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
    from costart.domain.spec import SpecFormat, parse_spec_warned  # noqa: PLC0415

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


def _requirements(selector: list[str] | None) -> tuple[Requirement, ...]:
    """``-l`` as given; a bad one is a usage error naming it."""
    if not selector:
        return ()
    from costart.domain.errors import DomainError  # noqa: PLC0415
    from costart.domain.label_selectors import parse_requirements  # noqa: PLC0415

    try:
        return parse_requirements(selector)
    except DomainError as error:
        raise UsageError(str(error)) from None


def _selected_groups(
    b: Backend, owner: str | None, state: str | None, requirements: tuple[Requirement, ...]
) -> list[GroupView]:
    """The groups of this owner and state whose labels meet every requirement (the
    ``key=value`` ones filtered where the groups are, the rest here)."""
    from costart.domain.label_selectors import equality_terms, matches_all  # noqa: PLC0415

    found = b.groups(owner, state, equality_terms(requirements))
    return [g for g in found if matches_all(g.labels, requirements)]


@get_app.command("groups")
def get_groups(
    ctx: typer.Context,
    names: Annotated[
        list[str] | None,
        typer.Argument(
            help="only these groups (NAME or group/NAME)", autocompletion=complete_group
        ),
    ] = None,
    output: OutputOption = "table",
    owner: Annotated[str | None, typer.Option(help="only this owner's groups")] = None,
    state: Annotated[str | None, typer.Option(help="only groups in this state")] = None,
    selector: SelectorOption = None,
    show_labels: Annotated[
        bool, typer.Option("--show-labels", help="add each group's labels as a last column")
    ] = False,
    sort_by: SortOption = None,
    no_headers: NoHeadersOption = False,
    watch: Annotated[
        bool, typer.Option("--watch", "-w", help="then print each group again as it changes")
    ] = False,
) -> None:
    """Groups in submission order (or --sort-by a column or field); NAME... picks some;
    -w follows."""
    from costart.cli import rows  # noqa: PLC0415
    from costart.cli.listing import Listing, watch_rows  # noqa: PLC0415

    with reported():
        out = parse_output(output)
        requirements = _requirements(selector)
        picked = [group_name(n) for n in names or ()]
        with backend(ctx) as b:
            remote = _watchable(b, watch)
            start = remote.position() if remote is not None else None
            groups = _selected_groups(b, owner, state, requirements)
            now = now_ns(b)
            if picked:
                by_name = {g.name: g for g in groups}
                missing = [n for n in picked if n not in by_name]
                if missing:
                    from costart.domain.errors import NotFound  # noqa: PLC0415

                    raise NotFound(f"no group named {', '.join(map(repr, missing))}")
                groups = [by_name[n] for n in dict.fromkeys(picked)]
            if sort_by:
                groups = sort_rows(groups, sort_by, GROUP_SORT_COLUMNS)
            wide = out.kind == "wide"
            clock = [now]  # a watch measures ages to the time of each change
            listing: Listing[GroupView] = Listing(
                out,
                rows.group_columns(wide, show_labels),
                lambda g: rows.group_row(g, clock[0], wide, show_labels),
                lambda g: f"group/{g.name}",
                headers=not no_headers,
            )
            listing.print(groups)
            if remote is not None:

                def changed(group: str) -> list[GroupView]:
                    everyone = remote.groups(None, None)
                    clock[0] = rows.age_reference(everyone, time.time_ns())
                    if picked and group not in picked:
                        return []
                    found = _selected_groups(remote, owner, state, requirements)
                    return [g for g in found if g.name == group]

                events = remote.watch(start, None)
                watch_rows(events, listing, groups, changed, key=lambda g: g.name)


get_app.command("group", hidden=True)(get_groups)  # kubectl takes a type singular too


def _selected_members(
    b: Backend, group: str | None, requirements: tuple[Requirement, ...]
) -> list[MemberView]:
    """The members (of ``group``, or all) whose group's labels meet ``requirements``."""
    members = b.members(group)
    if not requirements:
        return members
    groups = {g.name for g in _selected_groups(b, None, None, requirements)}
    return [m for m in members if m.group in groups]


@get_app.command("members")
def get_members(
    ctx: typer.Context,
    group: Annotated[
        str | None,
        typer.Argument(
            help="only this group's members (NAME or group/NAME)", autocompletion=complete_group
        ),
    ] = None,
    output: OutputOption = "table",
    selector: SelectorOption = None,
    sort_by: SortOption = None,
    no_headers: NoHeadersOption = False,
    watch: Annotated[
        bool, typer.Option("--watch", "-w", help="then print each member again as it changes")
    ] = False,
) -> None:
    """Members with their state, tasks, nodes, claims and restarts; -l picks them by
    their group's labels; -w follows."""
    from costart.cli import rows  # noqa: PLC0415
    from costart.cli.listing import Listing, watch_rows  # noqa: PLC0415

    with reported():
        out = parse_output(output)
        requirements = _requirements(selector)
        name = group_name(group) if group is not None else None
        with backend(ctx) as b:
            remote = _watchable(b, watch)
            start = remote.position() if remote is not None else None
            members = _selected_members(b, name, requirements)
            if sort_by:
                members = sort_rows(members, sort_by, MEMBER_SORT_COLUMNS)
            listing: Listing[MemberView] = Listing(
                out,
                rows.member_columns(),
                rows.member_row,
                lambda m: f"member/{m.group}/{m.name}",
                headers=not no_headers,
            )
            listing.print(members)
            if remote is not None:

                def changed(group_of: str) -> list[MemberView]:
                    return _selected_members(remote, group_of, requirements)

                events = remote.watch(start, name)
                watch_rows(events, listing, members, changed, key=lambda m: (m.group, m.name))


get_app.command("member", hidden=True)(get_members)


@get_app.command("holds")
def get_holds(
    ctx: typer.Context,
    output: OutputOption = "table",
    sort_by: SortOption = None,
    no_headers: NoHeadersOption = False,
) -> None:
    """Which nodes are held or used by which group and member."""
    from costart.cli import rows  # noqa: PLC0415
    from costart.cli.listing import Listing  # noqa: PLC0415

    with reported():
        out = parse_output(output)
        with backend(ctx) as b:
            holds = b.holds()
        if sort_by:
            holds = sort_rows(holds, sort_by, HOLD_SORT_COLUMNS)
        Listing(
            out,
            rows.HOLD_COLUMNS,
            rows.hold_row,
            lambda h: f"hold/{h.node}/{h.group}/{h.member}/{h.index}",
            headers=not no_headers,
        ).print(holds)


get_app.command("hold", hidden=True)(get_holds)


@describe_app.command("group")
def describe_group(ctx: typer.Context, name: GroupArgument, output: OutputOption = "table") -> None:
    """Members, holds, the pend reason with its numbers, and recent events."""
    from costart.cli import render  # noqa: PLC0415

    with reported():
        out = parse_output(output)
        with backend(ctx) as b:
            detail = b.describe(group_name(name))
            now = now_ns(b)
        emit(
            detail,
            out,
            lambda _: render.print_describe(console(), detail, now),
            [f"group/{detail.group.name}"],
        )


describe_app.command("groups", hidden=True)(describe_group)


@describe_app.command("member")
def describe_member(
    ctx: typer.Context, name: MemberArgument, output: OutputOption = "table"
) -> None:
    """One member: state, tasks and nodes, claims, restarts, its times and reason."""
    from costart.cli import render  # noqa: PLC0415
    from costart.domain.errors import NotFound  # noqa: PLC0415

    with reported():
        out = parse_output(output)
        group, member = member_name(name)
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


describe_app.command("members", hidden=True)(describe_member)


def events(
    ctx: typer.Context,
    name: GroupArgument,
    output: OutputOption = "table",
    no_headers: NoHeadersOption = False,
    follow: Annotated[
        bool, typer.Option("--follow", "-f", help="then print new events as they happen")
    ] = False,
) -> None:
    """A group's timeline: every event with its controller time."""
    from costart.cli import rows  # noqa: PLC0415
    from costart.cli.listing import Listing  # noqa: PLC0415
    from costart.display import clock  # noqa: PLC0415

    with reported():
        out = parse_output(output)
        group = group_name(name)
        with backend(ctx) as b:
            remote = _watchable(b, follow)
            timeline = b.events(group)
            origin = timeline[0].at_ns if timeline else 0
            listing: Listing[TimelineEntry] = Listing(
                out,
                rows.EVENT_COLUMNS,
                lambda e: rows.event_row(e, origin),
                lambda e: f"event/{group}/{e.position}",
                headers=not no_headers,
            )
            if out.kind in ("table", "wide") and not no_headers and timeline:
                # The TIME column counts from the submission: say from when (ADR 0082).
                typer.echo(f"times: +offset from {group}'s submission at {clock(origin)}")
            listing.print(timeline)
            if remote is not None:
                _follow_events(remote, group, listing, timeline)


def _follow_events(
    b: RemoteBackend, group: str, listing: Listing[TimelineEntry], shown: list[TimelineEntry]
) -> None:
    """Each new event of ``group`` as one more row of the same listing (same columns,
    same format): the watch stream says when, the timeline gives the row."""

    last = shown[-1].position if shown else 0
    for event in b.watch(last, group):
        if event.position <= last:
            continue
        new = [e for e in b.events(group) if e.position > last]
        listing.more(new)
        last = max([last, *(e.position for e in new)])


def _watchable(b: Backend, wanted: bool) -> RemoteBackend | None:
    """The backend to watch through, if watching was asked for (needs ``--server``)."""
    if not wanted:
        return None
    from costart.cli.backend import RemoteBackend  # noqa: PLC0415

    if not isinstance(b, RemoteBackend):
        raise UsageError("watching needs --server URL (the watch stream of `costart serve`)")
    return b


def scale(
    ctx: typer.Context,
    member: MemberArgument,
    replicas: Annotated[int, typer.Option(help="desired replicas")],
) -> None:
    """Scale a replica set: scale-up places single replicas, scale-down stops the highest."""
    with reported():
        group, name = member_name(member)
        with backend(ctx) as b:
            row = b.scale(group, name, replicas)
    typer.echo(f"member/{row.group}/{row.name} scaled to {row.desired} ({row.state})")


def why(ctx: typer.Context, name: GroupArgument, output: OutputOption = "table") -> None:
    """Why a group is pending: its current reason and every change."""
    from costart.cli import render  # noqa: PLC0415

    with reported():
        out = parse_output(output)
        with backend(ctx) as b:
            answer = b.why(group_name(name))
            now = now_ns(b)
        emit(
            answer,
            out,
            lambda _: render.print_why(console(), answer, now),
            [f"group/{answer.group}"],
        )


def cancel(ctx: typer.Context, name: GroupArgument) -> None:
    """Cancel a group: tear down its members and release everything it holds."""
    with reported():
        group = group_name(name)
        with backend(ctx) as b:
            row = b.cancel(group)
    typer.echo(f"group/{row.name} {row.state.lower()}")
