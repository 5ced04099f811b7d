"""The plain-text table: columns as wide as their widest cell, rows printed later (a
watch's) under the same columns, a wider later cell widening its column from then on."""

from __future__ import annotations

import pytest

from costart.cli.text_table import TextTable
from tests.cli.table_cells import read_rows


def test_rows_line_up_under_the_headers() -> None:
    table = TextTable(["name", "state", "reason"])
    header, *rows = table.lines([["a", "RUNNING", "-"], ["longer-name", "PENDING", "waits"]])
    assert header == "NAME         STATE    REASON"
    assert rows == ["a            RUNNING  -     ", "longer-name  PENDING  waits "]


def test_a_wider_later_cell_widens_its_column_for_the_rows_after_it() -> None:
    table = TextTable(["name", "deadline", "age"])
    header, first = table.lines([["a", "-", "3s"]])
    wide = table.line(["b", "barrier in 4m59s", "1s"])
    after = table.line(["c", "-", "2s"])
    assert read_rows(header, [first, wide, after]) == [
        ["a", "-", "3s"],
        ["b", "barrier in 4m59s", "1s"],
        ["c", "-", "2s"],
    ]
    # The row after the wide one is aligned to the widened column, not the header's.
    assert after.index("2s") == wide.index("1s")


def test_a_row_of_the_wrong_length_is_refused() -> None:
    with pytest.raises(ValueError, match="a row of 2 cells for 3 columns"):
        TextTable(["a", "b", "c"]).line(["x", "y"])
