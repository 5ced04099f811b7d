"""Every table the CLI prints, in one style: kubectl's (no borders, upper-case headers,
columns separated by spaces, long cells folded rather than cut)."""

from __future__ import annotations

from collections.abc import Sequence

from rich.table import Table


def plain_table(
    columns: Sequence[str], *, title: str | None = None, right: Sequence[str] = ()
) -> Table:
    """A table with these column headers (upper-cased); ``right``: right-aligned ones."""
    table = Table(box=None, pad_edge=False, title=title, title_justify="left")
    for column in columns:
        table.add_column(
            column.upper(), overflow="fold", justify="right" if column in right else "left"
        )
    return table
