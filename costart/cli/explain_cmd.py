"""`costart explain FIELD.PATH`: one spec field's reference, as `kubectl explain` gives it.

The words come from the spec reference (`costart.domain.spec_reference`), the same the
docs' spec page and the OpenAPI submit schema show. A path may carry list indexes
(``members[0].shape.gpu``) and the user's own keys (``members.run.probes.weights.file``).
A path that names no field is one line on stderr with the nearest paths (exit 2), except
when its last name belongs to exactly one field: that field is explained, after a note
saying which it is (``members.failure.max_restarts`` is ``failure.rules.max_restarts``).
"""

from __future__ import annotations

import textwrap
from typing import Annotated

import msgspec
import typer

from costart.cli.exits import EXIT_USAGE
from costart.domain.spec_reference import (
    SpecField,
    find_field,
    near_fields,
    refusal,
    spec_fields,
)

WIDTH = 88


def explain_text(field: SpecField) -> str:
    """The field's reference as the command prints it."""
    lines = [f"FIELD:    {field.path} <{field.type}>"]
    if field.required:
        lines.append("REQUIRED: yes")
    elif field.default is not None:
        lines.append(f"DEFAULT:  {field.default}")
    if field.text.unit:
        lines.append(f"UNIT:     {field.text.unit}")
    if field.text.limit:
        lines.append(f"LIMIT:    {field.text.limit}")
    lines += [
        "",
        "DESCRIPTION:",
        *textwrap.wrap(field.text.what, WIDTH, initial_indent="    ", subsequent_indent="    "),
    ]
    refused = refusal(field)
    if refused is not None:
        value, error = refused
        lines += [
            "",
            "A BAD VALUE:",
            f"    {field.name} = {msgspec.json.encode(value).decode()}",
            f"    -> {error}",
        ]
    children = [f for f in spec_fields() if _is_child(field.path, f.path)]
    if children:
        lines += ["", "FIELDS:"]
        lines += [f"    {c.path[len(field.path) + 1 :]:<24} <{c.type}>" for c in children]
    return "\n".join(lines)


def _is_child(parent: str, path: str) -> bool:
    """``path`` is one step below ``parent`` (a user's ``<key>`` step not counted)."""
    if not path.startswith(parent + "."):
        return False
    steps = path[len(parent) + 1 :].split(".")
    return len(steps) == 1 or (len(steps) == 2 and steps[0].startswith("<"))


def resolve(path: str) -> tuple[SpecField | None, str]:
    """The field ``path`` explains and a note for stderr (empty: none), or None and the
    one-line error."""
    field = find_field(path)
    if field is not None:
        return field, ""
    near = near_fields(path)
    same_leaf = [p for p in near if p.rsplit(".", 1)[-1] == path.rsplit(".", 1)[-1]]
    if len(same_leaf) == 1:
        found = find_field(same_leaf[0])
        return found, f"note: {path} is not a spec field; {same_leaf[0]} is the one named so"
    hint = f"; near: {', '.join(near)}" if near else "; `costart explain .` lists them"
    return None, f"error: {path!r} is no field of a group spec{hint}"


def top_level() -> str:
    rows = [f for f in spec_fields() if "." not in f.path]
    return "\n".join(["FIELDS of a group spec:"] + [f"    {f.path:<12} <{f.type}>" for f in rows])


def explain(
    field: Annotated[
        str,
        typer.Argument(
            help="a spec field's path, e.g. failure.rules.max_restarts ('.': the top level)"
        ),
    ],
) -> None:
    """Print one spec field's reference: type, default, unit, limit, what it does and the
    error a bad value gets."""
    if field.strip(".") == "":
        typer.echo(top_level())
        return
    found, note = resolve(field)
    if note:
        typer.echo(note, err=True)
    if found is None:
        raise typer.Exit(EXIT_USAGE)
    typer.echo(explain_text(found))
