"""``-o``/``--output`` as kubectl spells it: ``table``, ``wide``, ``json``, ``yaml``,
``name`` (``group/NAME`` lines, for scripts and xargs), ``jsonpath=TEMPLATE`` and
``custom-columns=HEADER:.path,...``; ``--sort-by`` a column or a field.

The jsonpath subset covers what scripts use: ``{.field.sub}``, ``{.items[*].name}``,
``{.items[0].name}``, quoted literals such as ``{"\\n"}``, and text between braces. A
list answer is wrapped as ``{"items": [...]}`` as kubectl does; a list value prints its
elements separated by spaces; a structure prints as JSON. Anything else is an error
naming the part that could not be read.
"""

from __future__ import annotations

import json
import re
from typing import Any, Final, Literal

import msgspec

from costart.cli.exits import UsageError

OutputKind = Literal["table", "wide", "json", "yaml", "name", "jsonpath", "custom-columns"]
PLAIN: Final = ("table", "wide", "json", "yaml", "name")
_SEGMENT: Final = re.compile(r"\{([^{}]*)\}")
_STEP: Final = re.compile(r"\.([A-Za-z_][A-Za-z0-9_]*)(?:\[(\*|\d+)\])?")
_PATH: Final = re.compile(r"\.|(?:\.[A-Za-z_][A-Za-z0-9_]*(?:\[(?:\*|\d+)\])?)+")
_LITERAL: Final = re.compile(r'"((?:[^"\\]|\\.)*)"')
_COLUMN: Final = re.compile(r"([^:,]+):(\S+)")
FORMS: Final = "table, wide, json, yaml, name, jsonpath=TEMPLATE or custom-columns=HEADER:.path,..."
NONE: Final = "<none>"  # a custom column's null, as kubectl prints it


class Output(msgspec.Struct, frozen=True):
    kind: OutputKind
    template: str | None = None


def parse_output(text: str) -> Output:
    """``-o`` as given; raises `UsageError` naming the accepted forms."""
    if text in PLAIN:
        return Output(text)  # type: ignore[arg-type]
    kind, sep, template = text.partition("=")
    if kind == "jsonpath" and sep and template:
        _segments(template)  # refuse a bad template before anything runs
        return Output("jsonpath", template)
    if kind == "custom-columns" and sep and template:
        custom_columns(template)
        return Output("custom-columns", template)
    raise UsageError(f"bad --output {text!r}: use {FORMS}")


def custom_columns(template: str) -> list[tuple[str, str]]:
    """``HEADER:.path,...`` as (header, path) pairs; `UsageError` naming a bad one."""
    columns = []
    for part in template.split(","):
        found = _COLUMN.fullmatch(part.strip())
        path = found.group(2).removeprefix("{").removesuffix("}") if found else ""
        path = path if path.startswith(".") else f".{path}"
        if found is None or path == "." or not _PATH.fullmatch(path):
            raise UsageError(
                f"bad custom column {part!r}: expected HEADER:.field (e.g. NAME:.name)"
            )
        columns.append((found.group(1).strip(), path))
    return columns


def fields_of(row: Any) -> list[str]:
    """The top-level fields of a row, as ``.field`` paths (to list on a miss)."""
    builtins = msgspec.to_builtins(row)
    return [f".{key}" for key in builtins] if isinstance(builtins, dict) else []


def column_cells(rows: list[Any], columns: list[tuple[str, str]]) -> list[list[str]]:
    """Each row's cells for ``columns``: a list joined with commas, null as ``<none>``;
    a field no row has is a `UsageError` naming the fields there are."""
    cells = []
    for row in rows:
        document = msgspec.to_builtins(row)
        line = []
        for _, path in columns:
            first = _STEP.match(path)
            if first is None or not isinstance(document, dict) or first.group(1) not in document:
                fields = ", ".join(fields_of(row))
                raise UsageError(
                    f"jsonpath {path}: no field {first and first.group(1)!r} ({fields})"
                )
            found = _walk([document], path, lenient=True)
            values = [_text(v) for v in found if v is not None]
            line.append(",".join(values) if values else NONE)
        cells.append(line)
    return cells


def _segments(template: str) -> list[tuple[str, str]]:
    """The template as (kind, text) parts: ("text", ...), ("literal", ...), ("path", ...)."""
    parts: list[tuple[str, str]] = []
    at = 0
    for match in _SEGMENT.finditer(template):
        if match.start() > at:
            parts.append(("text", template[at : match.start()]))
        inner = match.group(1).strip()
        literal = _LITERAL.fullmatch(inner)
        if literal is not None:
            try:
                parts.append(("literal", json.loads(f'"{literal.group(1)}"', strict=False)))
            except json.JSONDecodeError:
                raise UsageError(f"bad jsonpath literal {{{inner}}}") from None
        elif _PATH.fullmatch(inner):
            parts.append(("path", inner))
        else:
            raise UsageError(f"bad jsonpath {{{inner}}}: expected e.g. {{.items[*].name}}")
        at = match.end()
    rest = template[at:]
    if "{" in rest or "}" in rest:
        raise UsageError(f"bad jsonpath template {template!r}: unbalanced braces")
    if rest:
        parts.append(("text", rest))
    return parts


def _walk(values: list[Any], path: str, *, lenient: bool = False) -> list[Any]:
    """The values at ``path`` in each of ``values``. ``lenient``: a null or a missing key
    on the way ends that branch (a field null in some rows, a label some groups lack),
    instead of an error."""
    if path == ".":
        return values
    for step in _STEP.finditer(path):
        field, index = step.group(1), step.group(2)
        found: list[Any] = []
        for value in values:
            if lenient and (value is None or (isinstance(value, dict) and field not in value)):
                continue
            if not isinstance(value, dict) or field not in value:
                raise UsageError(f"jsonpath {path}: no field {field!r}")
            item = value[field]
            if index is None:
                found.append(item)
            elif not isinstance(item, list):
                raise UsageError(f"jsonpath {path}: {field!r} is not a list")
            elif index == "*":
                found.extend(item)
            elif int(index) < len(item):
                found.append(item[int(index)])
            else:
                raise UsageError(f"jsonpath {path}: {field}[{index}] is out of range")
        values = found
    return values


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def as_document(data: Any) -> Any:
    """Builtins for ``data``; a list is wrapped as ``{"items": [...]}``."""
    builtins = msgspec.to_builtins(data)
    return {"items": builtins} if isinstance(builtins, list) else builtins


def jsonpath(data: Any, template: str) -> str:
    """Fill ``template`` from ``data`` (see the module docstring)."""
    document = as_document(data)
    out: list[str] = []
    for kind, text in _segments(template):
        if kind == "path":
            out.append(" ".join(_text(v) for v in _walk([document], text)))
        else:
            out.append(text)
    return "".join(out)


def sort_rows(rows: list[Any], key: str, columns: dict[str, str] | None = None) -> list[Any]:
    """``rows`` sorted by a column (``--sort-by AGE``: ``columns`` maps a column to its
    field) or a field (``.priority`` or ``priority``), stable; rows without the field (or
    with null) last. A key that is neither names the columns and fields there are."""
    columns = columns or {}
    path = columns.get(key.strip().upper()) or key.strip().removeprefix("{").removesuffix("}")
    path = path if path.startswith(".") else f".{path}"
    known = fields_of(rows[0]) if rows else []
    first = _STEP.match(path)
    if (
        not _PATH.fullmatch(path)
        or path == "."
        or (known and (first is None or f".{first.group(1)}" not in known))
    ):
        choices = ", ".join([*columns, *known]) or "a field such as .priority"
        raise UsageError(f"bad --sort-by {key!r}: sort by one of {choices}")

    def value(row: Any) -> tuple[int, Any]:
        try:
            found = _walk([msgspec.to_builtins(row)], path, lenient=True)
        except UsageError:  # a key this row's map lacks (``.members_by_state.FAILED``)
            return (1, "")
        if not found or found[0] is None:
            return (1, "")
        v = found[0]
        return (0, v if isinstance(v, int | float | str) else _text(v))

    keyed = [(value(row), i, row) for i, row in enumerate(rows)]
    kinds = {type(k[1]) for (k, _, _) in keyed if k[0] == 0}
    if len(kinds) > 1:  # mixed numbers and text: compare as text
        keyed = [((k[0], str(k[1])), i, row) for (k, i, row) in keyed]
    return [row for _, _, row in sorted(keyed, key=lambda t: (t[0], t[1]))]
