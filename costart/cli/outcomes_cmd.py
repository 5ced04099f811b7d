"""`costart replay outcomes`: one log's figures (time to start, wasted GPU-hours in their
three parts, deadlocks, utilization, each group's fate), or two logs side by side
(`costart.replay.outcomes`).

Every `replay` command shares this module's app, so the simulator's accounting, the
placement layer and the plot are imported when this command runs, not when the module
loads (`costart replay verify` loads none of them, ADR 0078)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Collection
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, TypeVar

import typer

from costart.cli.commands import Target, console
from costart.cli.exits import UsageError, reported
from costart.cli.replay_logs import LogOption, opened_at, opened_log

if TYPE_CHECKING:
    from costart.placement.cluster import Cluster
    from costart.replay.outcomes.compare import Comparison
    from costart.replay.outcomes.figures import LogFigures

T = TypeVar("T")
LABELS = ("actual", "against")
ClusterOption = Annotated[
    Path | None,
    typer.Option(
        "--cluster", help="the cluster file the log ran on (default: the global --cluster)"
    ),
]


def _cluster(path: Path | None, ctx: typer.Context, flag: str) -> tuple[Cluster, Path]:
    from costart.placement.cluster import ClusterError  # noqa: PLC0415 (module docstring)
    from costart.placement.cluster_file import load_cluster  # noqa: PLC0415

    target: Target = ctx.obj
    chosen = path if path is not None else target.cluster
    if chosen is None:
        raise UsageError(f"give the cluster the log ran on: {flag} FILE")
    try:
        return load_cluster(chosen).build(), chosen
    except ClusterError as error:
        raise UsageError(f"{flag} {chosen}: {error}") from None


def _labels(first: str, second: str) -> tuple[str, str]:
    """Each log named by its directory's name; "actual" and "against" when that does
    not tell them apart (the same name, or a database URL)."""
    names = tuple("" if "://" in where else Path(where).name for where in (first, second))
    if all(names) and names[0] != names[1]:
        return names[0], names[1]
    return LABELS


def _measured(read: Callable[[], T]) -> T:
    """A log that cannot be measured (no events, another cluster's nodes) is a usage
    error naming why."""
    try:
        return read()
    except ValueError as error:
        raise UsageError(str(error)) from None


def outcomes_cmd(
    ctx: typer.Context,
    log_dir: LogOption = None,
    cluster: ClusterOption = None,
    against: Annotated[
        str | None,
        typer.Option(help="a second log (directory or postgresql://...): side by side"),
    ] = None,
    against_cluster: Annotated[
        Path | None,
        typer.Option(help="the cluster the --against log ran on (default: --cluster's)"),
    ] = None,
    groups: Annotated[bool, typer.Option(help="also each group's fate (one log)")] = False,
    output: Annotated[str, typer.Option("--output", "-o", help="table | json")] = "table",
    out: Annotated[
        Path | None,
        typer.Option(help="with --against: a folder for outcomes.json and outcomes.png"),
    ] = None,
) -> None:
    """Time to start, wasted GPU-hours, deadlocks, utilization and each group's fate of
    a log; with --against, two logs side by side and the groups whose fate changed most."""
    from costart.replay.outcomes.accounting import capacity_of, read_figures  # noqa: PLC0415
    from costart.replay.outcomes.report import comparison_json, write_outcomes  # noqa: PLC0415
    from costart.replay.outcomes.side_by_side import compare_logs  # noqa: PLC0415

    with reported():
        if output not in ("table", "json"):
            raise UsageError(f"unknown --output {output!r} (table | json)")
        if out is not None and against is None:
            raise UsageError("--out writes a comparison: give the second log with --against")
        built, cluster_path = _cluster(cluster, ctx, "--cluster")
        if against is None:
            with opened_log(ctx, log_dir) as log:
                actual = _measured(lambda: read_figures(log.source, built, label="actual"))
            _print_one(actual, output, groups, cluster_path)
            return
        other, other_path = (
            _cluster(against_cluster, ctx, "--against-cluster")
            if against_cluster is not None
            else (built, cluster_path)
        )
        target: Target = ctx.obj
        first = str(log_dir) if log_dir is not None else (target.store or "")
        labels = _labels(first, against)
        with opened_log(ctx, log_dir) as log, opened_at(against) as second:
            comparison = _measured(
                lambda: compare_logs(log.source, built, second.source, other, labels=labels)
            )
        if output == "json":
            sys.stdout.buffer.write(comparison_json(comparison))
            return
        screen = console()
        print_comparison(comparison)
        screen.print(
            f"capacity from {cluster_path} ({capacity_of(built)} GPUs)"
            + (
                ""
                if other_path == cluster_path
                else f" and {other_path} ({capacity_of(other)} GPUs)"
            ),
            highlight=False,
            markup=False,
        )
        for path in write_outcomes(comparison, out):
            screen.print(f"wrote {path}", highlight=False, markup=False)


def print_comparison(comparison: Comparison, said: Collection[str] = ()) -> None:
    """Two logs side by side on the terminal: each log's window, every figure with its
    change, the assumptions not ``said`` already, and the groups whose fate changed
    most (`costart replay outcomes --against` and `costart replay whatif`)."""
    from costart.cli.outcomes_view import (  # noqa: PLC0415 (module docstring)
        changes_table,
        comparison_table,
        window_text,
    )

    screen = console()
    for figures in (comparison.actual, comparison.whatif):
        screen.print(window_text(figures), highlight=False, markup=False)
    screen.print(comparison_table(comparison))
    for assumption in comparison.assumptions:
        if assumption not in said:
            screen.print(f"assumed: {assumption}", highlight=False, markup=False)
    if comparison.changed:
        screen.print(changes_table(comparison))
    else:
        screen.print("No group's fate changed.", highlight=False, markup=False)


def _print_one(figures: LogFigures, output: str, groups: bool, cluster_path: Path) -> None:
    from costart.cli.outcomes_view import (  # noqa: PLC0415 (module docstring)
        fates_table,
        figures_table,
        window_text,
    )
    from costart.replay.outcomes.report import figures_json  # noqa: PLC0415

    if output == "json":
        sys.stdout.buffer.write(figures_json(figures))
        return
    screen = console()
    screen.print(window_text(figures), highlight=False, markup=False)
    screen.print(figures_table(figures))
    if groups:
        screen.print(fates_table(figures))
    screen.print(
        f"capacity from {cluster_path} ({figures.capacity_gpus} GPUs)",
        highlight=False,
        markup=False,
    )
