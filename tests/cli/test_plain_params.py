"""`costart.cli.plain_params` converts what it converts exactly as typer's own coercion
does, on every option of every command; anything else goes to typer's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import typer
from typer import core

from costart.cli import plain_params
from costart.cli.main import COMMANDS, app

SAMPLES: dict[Any, list[Any]] = {
    str: ["", "table", "key in (a,b)", "-o", "ünï"],
    Path: ["x.toml", "/abs/dir", "rel/../x", "."],
    int: ["0", "7", "-3", "123456789"],
    float: ["0", "2.5", "-1.25", "30"],
    bool: [True, False],
}


def parameters() -> list[Any]:
    group = typer.main.get_command(app)
    ctx = group.make_context("costart", ["get"], resilient_parsing=True)
    found = list(group.params)
    pending = [group.get_command(ctx, name) for name in COMMANDS]
    while pending:
        command = pending.pop()
        found += command.params
        pending += list(getattr(command, "commands", {}).values())
    return [p for p in found if hasattr(p, "type_descriptor")]


def outcome(runtime: Any, value: Any, param: Any) -> tuple[str, Any]:
    """The value a coercion gives, or its error's message."""
    try:
        return ("value", runtime._coerce_value(value, param=param, ctx=None))
    except Exception as error:
        return ("error", f"{type(error).__name__}: {error}")


def test_the_wrapper_is_installed_and_keeps_typer_s_own():
    assert plain_params.install()
    assert core.build_runtime_param.plain_params
    assert plain_params.install()  # once: no wrapper around the wrapper
    assert not getattr(core.build_runtime_param.original, "plain_params", False)


def test_every_option_converts_as_typer_converts_it():
    original = core.build_runtime_param.original
    checked = plain = 0
    for param in parameters():
        descriptor = param.type_descriptor
        mine = core.build_runtime_param(descriptor)
        theirs = original(descriptor)
        annotation = descriptor.annotation
        inner = annotation.__args__[0] if getattr(annotation, "__origin__", None) is list else None
        values = SAMPLES.get(annotation) or [[v] for v in SAMPLES.get(inner, [])]
        plain += type(mine).__name__ == "PlainRuntimeParam"
        for value in values:
            expected = outcome(theirs, value, param)
            assert outcome(mine, value, param) == expected, (param.name, value)
            checked += 1
    print(f"{checked} values checked; {plain} options converted plainly")
    assert checked > 100 and plain > 30


@pytest.mark.parametrize(
    ("annotation", "value"), [(int, "1_000"), (int, " 3"), (float, "1e3"), (int, "3.0")]
)
def test_a_value_that_does_not_convert_plainly_goes_to_typer(annotation, value):
    convert = plain_params.plain_converter(annotation, object())
    assert convert is not None and convert(value) is NotImplemented
