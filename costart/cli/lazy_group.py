"""The top-level command group: commands load when they run, global flags go anywhere.

Each command is registered by name with the module that defines it and its one-line
help (`LazyCommand`), so ``costart --help`` lists every command without importing any,
and ``costart get groups`` imports what `get` needs and nothing of the simulator, the
agent or the server (ADR 0078). tests/cli/test_startup_imports.py holds the listed help
equal to the one each command generates.

Global options (``--store``, ``--server``, ``--token``...) are accepted after the command
too, as kubectl accepts them: `hoist_global_options` moves each one the command itself
does not define in front of the command before the group parses its options.
"""

from __future__ import annotations

import difflib
import importlib
import os
import sys
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import typer
from typer import _click as click
from typer._click.exceptions import UsageError
from typer._click.utils import make_default_short_help
from typer.core import TyperGroup, TyperOption

GLOBAL_OPTIONS_EPILOG = (
    "Global options (--store, --server, --token, --ca-file, --cluster, --log-level, "
    "--rebuild-views) go before or after the command: see `costart --help`."
)


class LazyCommand(NamedTuple):
    """A command registered by name: ``module:attribute`` (a `typer.Typer` becomes a
    group of commands; a function becomes one command) and its one-line help."""

    target: str
    help: str

    def load(self, name: str) -> click.Command:
        module_name, _, attribute = self.target.partition(":")
        found = getattr(importlib.import_module(module_name), attribute)
        if isinstance(found, typer.Typer):
            return typer.main.get_group(found)
        single = typer.Typer(add_completion=False, rich_markup_mode=None)
        single.command(name)(found)
        return typer.main.get_command(single)


def _takes_value(param: click.Parameter) -> bool:
    return isinstance(param, TyperOption) and not param.is_flag and not param.count


def _options(command: click.Command) -> dict[str, click.Parameter]:
    """Every spelling of every option of ``command`` -> its parameter."""
    return {
        spelling: param
        for param in command.params
        if isinstance(param, TyperOption)
        for spelling in (*param.opts, *param.secondary_opts)
    }


def hoist_global_options(group: TyperGroup, ctx: click.Context, args: Sequence[str]) -> list[str]:
    """``args`` with every global option found after the command moved in front of it
    (with its value). An option the command defines itself (``serve --cluster``,
    ``agent --server``) stays the command's; ``--`` ends the search; anything the group
    cannot resolve is left for the parser to report."""
    args = list(args)
    globals_ = _options(group)
    at = 0
    while at < len(args) and args[at].startswith("-"):  # the global options given first
        if args[at] == "--":
            return args
        param = globals_.get(args[at].split("=", 1)[0])
        if param is None:
            return args
        at += 2 if _takes_value(param) and "=" not in args[at] else 1
    if at >= len(args):
        return args
    command_at = at
    command = group.get_command(ctx, args[at])
    at += 1
    while isinstance(command, TyperGroup) and at < len(args) and not args[at].startswith("-"):
        sub = command.get_command(ctx, args[at])
        if sub is None:
            break
        command, at = sub, at + 1
    if command is None:
        return args
    own = _options(command)
    moved: list[str] = []
    kept: list[str] = []
    rest = args[at:]
    i = 0
    while i < len(rest):
        token = rest[i]
        if token == "--":
            kept += rest[i:]
            break
        name = token.split("=", 1)[0] if token.startswith("--") else token
        param = own.get(name)
        into = kept
        if param is None and name in globals_:
            param, into = globals_[name], moved
        into.append(token)
        if param is not None and _takes_value(param) and "=" not in token and i + 1 < len(rest):
            into.append(rest[i + 1])
            i += 1
        i += 1
    return args[:command_at] + moved + args[command_at:at] + kept


class LazyGroup(TyperGroup):
    """A `TyperGroup` whose `lazy` commands load on first use (see the module doc)."""

    lazy: Mapping[str, LazyCommand] = {}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._loaded: dict[str, click.Command] = {}

    def list_commands(self, ctx: click.Context) -> list[str]:
        return [*super().list_commands(ctx), *(n for n in self.lazy if n not in self.commands)]

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        found = super().get_command(ctx, cmd_name)
        if found is not None or cmd_name not in self.lazy:
            return found
        if cmd_name not in self._loaded:
            command = self.lazy[cmd_name].load(cmd_name)
            command.name = cmd_name
            _add_epilog(command)
            self._loaded[cmd_name] = command
        return self._loaded[cmd_name]

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        args = hoist_global_options(self, ctx, args)
        return super().parse_args(ctx, args)

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        try:
            return super().resolve_command(ctx, args)
        except UsageError as error:  # "Did you mean" over every command, loaded or not
            close = difflib.get_close_matches(args[0], self.list_commands(ctx)) if args else []
            if close and "Did you mean" not in error.message:
                suggestions = ", ".join(repr(m) for m in close)
                error.message = f"{error.message.rstrip('.')}. Did you mean {suggestions}?"
            raise

    def invoke(self, ctx: click.Context) -> Any:
        """Run the command; a reader that closed the pipe (``| head -1``) ends it
        quietly with exit 0, as a shell tool does."""
        try:
            return super().invoke(ctx)
        except BrokenPipeError:
            _silence_stdout()
            raise typer.Exit(0) from None

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The commands and their one-line help, the lazy ones from the registry (the
        same text their own help begins with), so listing them imports none."""
        names = [n for n in self.list_commands(ctx) if not self._hidden(ctx, n)]
        if not names:
            return
        limit = formatter.width - 6 - max(len(n) for n in names)
        rows = [(name, self._listed_help(ctx, name, limit)) for name in names]
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def _listed_help(self, ctx: click.Context, name: str, limit: int) -> str:
        if name in self.commands or name not in self.lazy:
            command = self.get_command(ctx, name)
            return command.get_short_help_str(limit) if command is not None else ""
        return make_default_short_help(self.lazy[name].help, limit)

    def _hidden(self, ctx: click.Context, name: str) -> bool:
        if name in self.lazy and name not in self.commands:
            return False
        command = self.get_command(ctx, name)
        return command is None or command.hidden


def _add_epilog(command: click.Command) -> None:
    """Each command's help says where the global options go."""
    if command.epilog is None:
        command.epilog = GLOBAL_OPTIONS_EPILOG
    if isinstance(command, TyperGroup):
        for sub in command.commands.values():
            _add_epilog(sub)


def _silence_stdout() -> None:
    """Point stdout at /dev/null: the interpreter's last flush at exit must not meet the
    closed pipe again (and print "Exception ignored ... BrokenPipeError")."""
    try:
        descriptor = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # a test's captured stream
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, descriptor)
    os.close(devnull)
