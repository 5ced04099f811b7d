"""Reading a printed table back into cells, as `costart.cli.text_table` writes it."""

from __future__ import annotations

import itertools


def column_starts(header: str) -> list[int]:
    """Where each column starts: two spaces part columns, so a header of two words
    (``EXPECTED START``) is one column."""
    return [i for i, c in enumerate(header) if c != " " and (i == 0 or header[i - 2 : i] == "  ")]


def split_cells(line: str, widths: list[int]) -> list[str]:
    """A table line's cells, read as the table writes them: each column as wide as its
    widest cell so far (``widths``), two spaces between columns, a wider cell pushing
    the rest of the line right."""
    cells, at = [], 0
    for i, width in enumerate(widths):
        if i == len(widths) - 1:
            end = len(line)
        elif line[at + width : at + width + 2] == "  ":
            end = at + width
        else:  # wider than its column so far: it ends where the two spaces follow it
            end = line.index("  ", at + width)
        cells.append(line[at:end].rstrip())
        at = end + 2
    return cells


def header_widths(header: str) -> list[int]:
    """The widths a header's columns were printed at (the last one: the whole line)."""
    starts = column_starts(header)
    return [end - start - 2 for start, end in itertools.pairwise(starts)] + [len(header)]


def read_rows(header: str, rows: list[str]) -> list[list[str]]:
    """Each row's cells, in print order: the columns start as wide as the header's and
    widen as a wider cell is printed, as the table does."""
    widths, read = header_widths(header), []
    for row in rows:
        cells = split_cells(row, widths)
        widths = [max(w, len(cell)) for w, cell in zip(widths, cells, strict=True)]
        read.append(cells)
    return read
