"""`costart logs GROUP[/MEMBER[/TASK]]`: a task's output, relayed by `costart serve`
from the agent of the task's node (ADR 0084).

Only typer is imported with this module: the client and the printing
(`costart.cli.logs_view`) load when the command runs, so no other command's start-up
pays for this one.
"""

from __future__ import annotations

from typing import Annotated

import typer


def logs(
    ctx: typer.Context,
    target: Annotated[
        str,
        typer.Argument(
            metavar="GROUP[/MEMBER[/TASK]]",
            help="a group (all its tasks), a member (all its tasks) or one task",
        ),
    ],
    follow: Annotated[
        bool,
        typer.Option(
            "--follow",
            "-f",
            help="keep printing new output, and a restarted task's next attempt, "
            "until the group ends",
        ),
    ] = False,
    attempt: Annotated[
        int | None,
        typer.Option(min=0, help="the attempt to print (default: the task's current one)"),
    ] = None,
    tail: Annotated[
        int | None, typer.Option(min=0, help="start at the last N lines of the attempt")
    ] = None,
) -> None:
    """Print a task's output, relayed from its node's agent (-f follows restarts).

    Over ``--server``, for the group's owner and admins only. Default: the current
    attempt's output so far; several tasks print each line prefixed ``[member/task]``."""
    from costart.cli.logs_view import print_logs  # noqa: PLC0415 - loaded when it runs

    print_logs(ctx.obj, target, follow=follow, attempt=attempt, tail=tail)
