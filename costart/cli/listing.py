"""Lists as ``-o`` asks, the same for the list and for the rows a watch adds.

A `Listing` prints a list (``get``, ``events``) as a text table (``table``, ``wide``,
``custom-columns=...``, ``--no-headers``), JSON, YAML, names (``group/NAME``, what every
command takes back) or a jsonpath template; `Listing.more` prints rows that came later
(``-w``, ``-f``) in the same format: table rows aligned under the first table, each
object on its own for JSON, YAML (a ``---`` document each), names and jsonpath.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Hashable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar

import msgspec
import typer

from costart.cli.output import Output, column_cells, custom_columns, jsonpath
from costart.cli.text_table import TextTable

if TYPE_CHECKING:
    from costart.rest.client import WatchEvent

T = TypeVar("T")


def print_data(data: Any, kind: Literal["json", "yaml"]) -> None:
    """Machine-readable output: the view rows as JSON (indented) or YAML, in their
    fields' order, never wrapped."""
    builtins = msgspec.to_builtins(data)
    if kind == "json":
        typer.echo(json.dumps(builtins, indent=2, ensure_ascii=False))
    else:
        import yaml  # noqa: PLC0415  (only YAML output needs it)

        typer.echo(yaml.safe_dump(builtins, sort_keys=False, allow_unicode=True), nl=False)


class Listing(Generic[T]):
    def __init__(
        self,
        out: Output,
        columns: Sequence[str],
        row: Callable[[T], list[str]],
        name: Callable[[T], str],
        *,
        headers: bool = True,
    ) -> None:
        self.out = out
        self.row = row
        self.name = name
        self.custom = custom_columns(out.template or "") if out.kind == "custom-columns" else None
        heads = [header for header, _ in self.custom] if self.custom else list(columns)
        self.table = TextTable(heads, headers=headers)

    def _cells(self, items: Sequence[T]) -> list[list[str]]:
        if self.custom is not None:
            return column_cells(list(items), self.custom)
        return [self.row(item) for item in items]

    def print(self, items: Sequence[T]) -> None:
        """The whole list (a list document for JSON, YAML and jsonpath)."""
        kind = self.out.kind
        if kind in ("json", "yaml"):
            print_data(list(items), "json" if kind == "json" else "yaml")
        elif kind == "name":
            for item in items:
                typer.echo(self.name(item))
        elif kind == "jsonpath":
            typer.echo(jsonpath(list(items), self.out.template or ""))
        else:
            for line in self.table.lines(self._cells(items)):
                typer.echo(line)

    def more(self, items: Sequence[T]) -> None:
        """Rows that came after the list, each in the list's format."""
        kind = self.out.kind
        for item in items:
            if kind == "json":
                print_data(item, "json")
            elif kind == "yaml":
                typer.echo("---")
                print_data(item, "yaml")
            elif kind == "name":
                typer.echo(self.name(item))
            elif kind == "jsonpath":
                typer.echo(jsonpath(item, self.out.template or ""))
            else:
                typer.echo(self.table.line(self._cells([item])[0]))


def watch_rows(
    events: Iterator[WatchEvent],
    listing: Listing[T],
    shown: Sequence[T],
    changed: Callable[[str], list[T]],
    key: Callable[[T], Hashable],
) -> None:
    """After each event about a group, print the rows ``changed(group)`` gives that
    differ from what was printed last for them (``shown`` at first)."""
    last: dict[Hashable, Any] = {key(item): msgspec.to_builtins(item) for item in shown}
    for event in events:
        if event.group is None:
            continue
        fresh = []
        for item in changed(event.group):
            builtins = msgspec.to_builtins(item)
            if last.get(key(item)) != builtins:
                last[key(item)] = builtins
                fresh.append(item)
        listing.more(fresh)
