"""`costart replay ...`: forensics on a log opened read-only (a copy, or the live store),
and `costart snapshot` to write one on demand."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Annotated, Final, NoReturn

import msgspec
import typer

from costart.bootstrap import bootstrap
from costart.cli.commands import (
    GroupArgument,
    Target,
    console,
    reaching_store,
    require_store,
)
from costart.cli.completion import complete_group
from costart.cli.exits import (
    EXIT_DAMAGED,
    EXIT_ERROR,
    EXIT_OK,
    EXIT_USAGE,
    UsageError,
    reported,
)
from costart.cli.group_tables import members_table
from costart.cli.names import group_name
from costart.cli.outcomes_cmd import outcomes_cmd
from costart.cli.replay_logs import LogOption
from costart.cli.replay_logs import opened_log as _opened
from costart.cli.tables import plain_table
from costart.cli.whatif_cmd import whatif_cmd
from costart.display import offset, queue_text, reason_text
from costart.domain.world import World
from costart.eventlog.anchor import check_reaches
from costart.eventlog.errors import LogTailLostError
from costart.eventlog.replay_log import LogIntegrityError, ReplayLog
from costart.projections import ViewDamagedError, Views
from costart.replay.diff import diff_worlds, value_text
from costart.replay.export import export_jsonl
from costart.replay.points import Point, parse_point
from costart.replay.rebuild import rebuild, rebuild_until_time
from costart.replay.rebuild_check import verify
from costart.replay.time_base import LogSpan, TimeBase, log_span, time_base
from costart.replay.timeline import group_timeline
from costart.replay.timeline_html import render_html
from costart.replay.why import why as why_at

replay_app = typer.Typer(
    no_args_is_help=True, rich_markup_mode=None, help="Forensics on a log, read-only."
)


def _warn(message: str) -> None:
    typer.echo(f"warning: {message}", err=True)


def _warn_past_end(flag: str, text: str, point: Point, span: LogSpan, base: TimeBase) -> None:
    """A point past the log's end is answered with the log's end state: said so."""
    if point.position is not None and point.position > span.last_position:
        _warn(
            f"{flag} {text} is past the log's last position {span.last_position}: "
            "the answer is the state at the end of the log"
        )
    elif point.at_ns is not None and point.at_ns > span.last_ns:
        _warn(
            f"{flag} {text} is {base.at(point.at_ns)}, after the log's last event at "
            f"{base.at(span.last_ns)}: the answer is the state at the end of the log"
        )


def _world_at(log: ReplayLog, point: Point) -> World:
    if point.position is not None:
        return rebuild(log.source, until=point.position)
    assert point.at_ns is not None
    return rebuild_until_time(log.source, point.at_ns)


VERIFY_EXITS: Final = {
    EXIT_OK: "the records, snapshots and views all agree with a replay",
    EXIT_ERROR: "DIVERGENCE (on stderr, naming the position, aggregate and field): a record "
    "fails its checksum or the chain, a record is missing, or a snapshot or the views "
    "differ from a replay",
    EXIT_USAGE: "no log there: a --store or --log that is not a store, or no backend takes it",
    EXIT_DAMAGED: "the store's files fail their checks before a record is read (the file named)",
}
"""`costart replay verify`'s exit codes (its help prints them; tests/cli/test_replay_cli.py
makes each happen)."""


@replay_app.command("verify")
def verify_cmd(ctx: typer.Context, log_dir: LogOption = None) -> None:
    # The help text is set below, from VERIFY_EXITS.
    with reported(), _opened(ctx, log_dir) as log:
        out = console()
        try:
            log.integrity_check()
        except LogIntegrityError as error:
            typer.echo(f"DIVERGENCE at position {error.position} ({error.log}): {error}", err=True)
            raise typer.Exit(EXIT_ERROR) from None
        report = verify(
            log.source,
            log.snapshots,
            progress=lambda n: print(f"  {n:,} events", file=sys.stderr),
            # LMDB logs are hash-chained: a snapshot must name this chain. PostgreSQL's
            # log has no chain (its rows are checked for holes instead).
            log_hash_at=log.log_hash_at,
        )
        if report.divergence is not None:
            d = report.divergence
            typer.echo(
                f"DIVERGENCE at position {d.position}: {d.aggregate} {d.field}: {d.detail}",
                err=True,
            )
            raise typer.Exit(EXIT_ERROR)
        views_note = _verify_views(log)
        out.print(
            f"ok: {report.events} events, chain and checksums verified, "
            f"{report.snapshots_checked} snapshots byte-identical to replay{views_note}"
        )


verify_cmd.__doc__ = (
    "Check every record (checksums, hash chain), rebuild from scratch, compare every "
    "snapshot byte for byte and the views with rebuilt ones.\n\nExit codes:\n\n"
    + "\n\n".join(f"{code}: {meaning}" for code, meaning in VERIFY_EXITS.items())
)


def _views_divergence(message: str) -> NoReturn:
    typer.echo(f"DIVERGENCE in the views: {message}", err=True)
    raise typer.Exit(EXIT_ERROR)


def _verify_views(log: ReplayLog) -> str:
    views_dir = log.views_dir
    if views_dir is None or not (views_dir / "data.mdb").exists():
        return ""
    try:
        with Views(views_dir, readonly=True) as live:
            anchor = live.db.read_anchor()
            # The log must reach what the views were built from, before any comparison.
            check_reaches(log.source.recorder, anchor, "the views were built to")
            position = anchor.position
            stored = live.db.dump()
    except (ViewDamagedError, LogTailLostError) as error:
        _views_divergence(str(error))
    with tempfile.TemporaryDirectory() as scratch, Views(scratch) as rebuilt:

        class Until:
            recorder = log.source.recorder

            def read_events(self, after: int = 0, until: int | None = None):  # type: ignore[no-untyped-def]
                return log.source.read_events(after, position)

        rebuilt.rebuild(Until())
        fresh = rebuilt.db.dump()
    for name in sorted(set(stored) | set(fresh)):
        if stored.get(name) != fresh.get(name):
            typer.echo(
                f"DIVERGENCE in view {name!r} at position {position}: rebuilt view differs",
                err=True,
            )
            raise typer.Exit(EXIT_ERROR)
    return f", views equal to a rebuild at position {position}"


@replay_app.command("state")
def state_cmd(
    ctx: typer.Context,
    at: Annotated[str, typer.Option(help="position, offset (90s), @ns or ISO time")],
    group: Annotated[
        str | None,
        typer.Option(help="only this group (NAME or group/NAME)", autocompletion=complete_group),
    ] = None,
    output: Annotated[str, typer.Option("--output", "-o", help="table | json")] = "table",
    log_dir: LogOption = None,
) -> None:
    """The whole state (or one group) as it was at a point of the log."""
    with reported(), _opened(ctx, log_dir) as log:
        group = group_name(group) if group else None
        span = log_span(log.source, group)
        base = time_base(span, group)
        point = parse_point(at, log.source, base.origin_ns)
        _warn_past_end("--at", at, point, span, base)
        world = _world_at(log, point)
        groups = [world.group_named(group)] if group else list(world.groups_in_order())
        if output == "json":
            body = [
                {
                    "group": msgspec.to_builtins(g),
                    "members": msgspec.to_builtins(world.members_of(g)),
                }
                for g in groups
            ]
            sys.stdout.write(
                msgspec.json.encode({"position": world.position, "groups": body}).decode() + "\n"
            )
            return
        out = console()
        out.print(base.said(), highlight=False)
        out.print(f"position {world.position}, controller time {base.at(world.clock_ns)}")
        for g in groups:
            out.print(members_table(g, world.members_of(g), world.clock_ns))


@replay_app.command("why")
def why_cmd(
    ctx: typer.Context,
    name: GroupArgument,
    at: Annotated[str, typer.Option(help="offset (90s), @ns or ISO time; or a position")],
    log_dir: LogOption = None,
) -> None:
    """Why a group was not running at that time: its pend reason then, with its history."""
    with reported(), _opened(ctx, log_dir) as log:
        name = group_name(name)
        span = log_span(log.source, name)
        base = time_base(span, name)
        point = parse_point(at, log.source, base.origin_ns)
        _warn_past_end("--at", at, point, span, base)
        at_ns = point.at_ns
        if at_ns is None:
            world = rebuild(log.source, until=point.position)
            at_ns = world.clock_ns
        answer = why_at(log.source, name, at_ns)
        out = console()
        reason = answer.reason
        out.print(base.said(), highlight=False, markup=False)
        out.print(
            f"{answer.group}: {answer.status} at {base.at(at_ns)} (last event {answer.last_event})",
            highlight=False,
            markup=False,
        )
        if reason is None:
            out.print("  no pend reason at that time", highlight=False)
        else:
            out.print(f"  {reason_text(reason, at_ns)}", highlight=False, markup=False)
            for label, value in (
                ("member", reason.member),
                ("needs", reason.need),
                ("best", reason.best),
                ("queue", queue_text(reason)),
            ):
                if value is not None:
                    out.print(f"    {label}: {value}", highlight=False, markup=False)
        if not answer.history:
            out.print("No pend-reason changes up to then.", highlight=False)
            return
        table = plain_table(("position", "time", "reason"), title="Pend-reason history")
        for change in answer.history:
            table.add_row(
                str(change.position),
                base.at(change.at_ns),
                reason_text(change.reason, change.at_ns),
            )
        out.print(table)


@replay_app.command("timeline")
def timeline_cmd(
    ctx: typer.Context,
    name: GroupArgument,
    html: Annotated[Path | None, typer.Option(help="write a self-contained HTML page")] = None,
    log_dir: LogOption = None,
) -> None:
    """One lane per member with its states over time, and the group's events."""
    with reported(), _opened(ctx, log_dir) as log:
        name = group_name(name)
        timeline = group_timeline(log.source, name)
        if html is not None:
            html.write_text(render_html(timeline))
            typer.echo(f"wrote {html}")
            return
        out = console()
        out.print(TimeBase(timeline.start_ns, f"{name}'s submission").said(), highlight=False)
        for lane in timeline.lanes:
            spans = ", ".join(
                f"{s.state}@{offset(s.start_ns, timeline.start_ns)}" for s in lane.spans
            )
            out.print(f"{lane.name:>12}  {spans}", highlight=False, markup=False)


@replay_app.command("diff")
def diff_cmd(
    ctx: typer.Context,
    from_: Annotated[str, typer.Option("--from", help="position or time")],
    to: Annotated[str, typer.Option(help="position or time")],
    group: Annotated[
        str | None,
        typer.Option(
            help="only this group's changes (NAME or group/NAME); offsets then count from "
            "its submission",
            autocompletion=complete_group,
        ),
    ] = None,
    log_dir: LogOption = None,
) -> None:
    """Every field that changed between two points of the log, one line each."""
    with reported(), _opened(ctx, log_dir) as log:
        group = group_name(group) if group else None
        span = log_span(log.source, group)
        base = time_base(span, group)
        start = parse_point(from_, log.source, base.origin_ns)
        end = parse_point(to, log.source, base.origin_ns)
        _warn_past_end("--from", from_, start, span, base)
        _warn_past_end("--to", to, end, span, base)
        before, after = _world_at(log, start), _world_at(log, end)
        if (before.position, before.clock_ns) > (after.position, after.clock_ns):
            _warn(f"--from {from_} is after --to {to}: the changes are shown from --from to --to")
        label = None if group is None else f"group {group}"
        member = None if group is None else f"member {group}/"
        changes = [
            c
            for c in diff_worlds(before, after)
            if label is None or c.aggregate == label or c.aggregate.startswith(str(member))
        ]
        out = console()
        out.print(base.said(), highlight=False, markup=False)
        out.print(
            f"position {before.position} at {base.at(before.clock_ns)} -> "
            f"position {after.position} at {base.at(after.clock_ns)}",
            highlight=False,
            markup=False,
        )
        if not changes:
            out.print("No field changed.", highlight=False)
            return
        for change in changes:  # one line each, never a wrapped structure
            typer.echo(
                f"{change.aggregate} {change.field}: "
                f"{value_text(change.field, change.before)} -> "
                f"{value_text(change.field, change.after)}"
            )


@replay_app.command("export")
def export_cmd(
    ctx: typer.Context,
    fmt: Annotated[str, typer.Option("--format", help="jsonl")] = "jsonl",
    out: Annotated[Path | None, typer.Option(help="file (default: stdout)")] = None,
    log_dir: LogOption = None,
) -> None:
    """Every event as one JSON object per line, with its position."""
    with reported(), _opened(ctx, log_dir) as log:
        if fmt != "jsonl":
            raise UsageError(f"unknown format {fmt!r} (jsonl)")
        if out is None:
            try:
                count = export_jsonl(log.source, sys.stdout.buffer)
            except BrokenPipeError:  # e.g. `| head`: the reader has what it wanted
                sys.stderr.close()
                return
        else:
            with out.open("wb") as handle:
                count = export_jsonl(log.source, handle)
        print(f"{count} events", file=sys.stderr)


def snapshot(ctx: typer.Context) -> None:
    """Write a whole-state snapshot of the store's log now (`--store DIR`)."""
    with reported():
        target: Target = ctx.obj
        if target.store is None:
            raise UsageError("snapshot needs --store DIR|postgresql://...")
        require_store(target)
        with reaching_store(target):
            # No placement step: a snapshot decides nothing.
            controller = bootstrap(target.settings(), placement=None)
            try:
                position = controller.snapshot_now()
            finally:
                controller.close()
        typer.echo(f"snapshot at position {position}")


replay_app.command("outcomes")(outcomes_cmd)
replay_app.command("whatif")(whatif_cmd)


def register(app: typer.Typer) -> None:
    app.add_typer(replay_app, name="replay")
    app.command()(snapshot)
