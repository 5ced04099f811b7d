"""The CLI reference, from the command line's own definitions: the click commands typer
builds from `costart.cli.main.app` (typer carries its own click, so they are read by
their interface, not by class)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from costart.cli.main import app
from docs.gen.markdown import GENERATED, code, table

ROOT = Path(__file__).resolve().parents[2]


def _context(command: Any, path: list[str]) -> Any:
    return command.context_class(command, info_name=" ".join(path))


def _commands(group: Any, prefix: list[str]) -> list[tuple[list[str], Any]]:
    found: list[tuple[list[str], Any]] = []
    ctx = _context(group, prefix)
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        if command is None or command.hidden:
            continue
        found.append(([*prefix, name], command))
        if hasattr(command, "list_commands"):
            found += _commands(command, [*prefix, name])
    return found


def _shown(value: Any) -> str:
    """A default as people write it: a path of this checkout relative to it."""
    if isinstance(value, Path) and value.is_absolute() and value.is_relative_to(ROOT):
        return str(value.relative_to(ROOT))
    return str(value)


def _default(param: Any) -> str:
    if param.required:
        return "required"
    default = param.default
    if default is None or default in ((), []) or callable(default):
        return ""
    if getattr(param, "is_flag", False):
        return "on" if default else ""
    return code(_shown(default))


def _param_rows(command: Any, path: list[str]) -> list[tuple[str, str, str, str]]:
    ctx = _context(command, path)
    rows = []
    for param in command.params:
        if getattr(param, "hidden", False):
            continue
        if param.param_type_name == "argument":
            name = code(param.name.upper())
        else:
            name = ", ".join(code(o) for o in [*param.opts, *param.secondary_opts])
        help_text = getattr(param, "help", None) or ""
        if getattr(param, "envvar", None):
            help_text += f" (env {code(param.envvar)})"
        type_name = param.display_type(ctx).strip("<>")
        rows.append((name, type_name, _default(param), help_text))
    return rows


def _usage(path: list[str], command: Any) -> str:
    return " ".join([*path, *command.collect_usage_pieces(_context(command, path))])


def _help(command: Any) -> str:
    text = (command.help or command.short_help or "").strip()
    return " ".join(text.split())


def cli_page() -> str:
    root = typer.main.get_command(app)
    header = ("option", "type", "default", "what it does")
    parts = [
        GENERATED,
        "# CLI reference\n",
        "Every command of `costart`, read from its own definitions. Global options come"
        " before the command (`costart --store DIR get groups`). Exit codes: 0 ok, 1 error,"
        " 2 usage, 3 invalid spec, 4 not found, 5 conflict, 6 unauthorized or forbidden,"
        " 7 damaged store, 8 the log lost its tail, 9 out of space.\n",
        "## costart\n",
        f"```text\n{_usage(['costart'], root)}\n```\n",
        _help(root) + "\n",
        table(header, _param_rows(root, ["costart"])),
    ]
    for path, command in _commands(root, ["costart"]):
        heading = "#" * min(len(path), 4)
        parts += [
            f"{heading} {' '.join(path[1:])}\n",
            f"```text\n{_usage(path, command)}\n```\n",
            _help(command) + "\n",
        ]
        rows = _param_rows(command, path)
        if rows:
            parts.append(table(header, rows))
    return "\n".join(parts)
