"""kubectl's table as plain text: upper-case headers, each column as wide as its widest
cell, two spaces between columns, no borders, nothing folded (a long cell makes a long
line, whole for grep and cut).

A `TextTable` remembers its widths, so the rows a watch prints later line up under the
table printed first (a wider cell widens its column from then on).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

SEPARATOR = "  "


class TextTable:
    def __init__(self, columns: Sequence[str], *, headers: bool = True) -> None:
        self.columns = [c.upper() for c in columns]
        self.headers = headers
        self.widths = [len(c) if headers else 0 for c in self.columns]

    def _line(self, cells: Sequence[str]) -> str:
        return SEPARATOR.join(
            cell.ljust(width) for cell, width in zip(cells, self.widths, strict=True)
        )

    def _widen(self, rows: Iterable[Sequence[str]]) -> None:
        for row in rows:
            if len(row) != len(self.columns):
                raise ValueError(f"a row of {len(row)} cells for {len(self.columns)} columns")
            self.widths = [max(w, len(cell)) for w, cell in zip(self.widths, row, strict=True)]

    def lines(self, rows: Sequence[Sequence[str]]) -> list[str]:
        """The header (unless ``--no-headers``) and ``rows``, aligned."""
        self._widen(rows)
        head = [self._line(self.columns)] if self.headers else []
        return head + [self._line(row) for row in rows]

    def line(self, row: Sequence[str]) -> str:
        """One more row, in the columns printed so far."""
        self._widen([row])
        return self._line(row)
