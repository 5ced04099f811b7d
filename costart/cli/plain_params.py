"""Plain coercion of the CLI's simple option values, beside typer's own (ADR 0078).

typer (0.20 and later) coerces every option value through a pydantic ``TypeAdapter``
built on first use: importing pydantic and building the adapters of one command costs
more than the rest of a ``get groups``. The options of costart's commands are almost all
``str``, ``Path``, ``int``, ``float``, ``bool`` (or lists of them): for a value that converts
cleanly (``-?[0-9]+`` for an int, a plain decimal for a float, no bound to check) this
module converts it itself; anything else (a bound, a choice, a value that does not
convert) goes to typer's own coercion, so every error message stays typer's.

`install` wraps typer's ``build_runtime_param`` when this typer has one (older typers
coerce through click, without pydantic, and are left alone).
tests/cli/test_plain_params.py compares the two coercions on every option of every
command.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, get_args, get_origin

_INT: Final = re.compile(r"-?[0-9]{1,18}")
_FLOAT: Final = re.compile(r"-?[0-9]{1,15}(\.[0-9]{1,15})?")
_PATH_DEFAULTS: Final = {
    "exists": False,
    "file_okay": True,
    "dir_okay": True,
    "writable": False,
    "readable": True,
    "resolve_path": False,
    "allow_dash": False,
    "path_type": None,
}
_PLAIN: Final[dict[Any, Callable[[str], Any]]] = {str: str, Path: Path}
_NUMBERS: Final[dict[Any, tuple[re.Pattern[str], Callable[[str], Any]]]] = {
    int: (_INT, int),
    float: (_FLOAT, float),
}


def plain_converter(annotation: Any, parameter_info: Any) -> Callable[[Any], Any] | None:
    """A converter for one value of ``annotation``, or None where typer's own coercion
    must decide (a bound, a choice, a callback parser, any other type). The converter
    returns `NotImplemented` for a value it leaves to typer."""
    if getattr(parameter_info, "min", None) is not None:
        return None
    if getattr(parameter_info, "max", None) is not None:
        return None
    if getattr(parameter_info, "parser", None) is not None:
        return None
    if getattr(parameter_info, "click_type", None) is not None:
        return None
    if annotation is Path and any(
        getattr(parameter_info, name, default) != default
        for name, default in _PATH_DEFAULTS.items()
    ):
        return None  # a check on the path (exists, writable...): typer's
    if annotation in _PLAIN:
        make = _PLAIN[annotation]

        def plain(value: Any) -> Any:
            if isinstance(value, annotation):  # a default given as the type itself
                return value
            return make(value) if isinstance(value, str) else NotImplemented

        return plain
    if annotation is bool:
        return lambda value: value if isinstance(value, bool) else NotImplemented
    if annotation in _NUMBERS:
        pattern, number = _NUMBERS[annotation]

        def convert(value: Any) -> Any:
            if type(value) is annotation:  # a default given as a number
                return value
            if isinstance(value, str) and pattern.fullmatch(value):
                return number(value)
            return NotImplemented

        return convert
    return None


def _list_converter(annotation: Any, parameter_info: Any) -> Callable[[Any], Any] | None:
    if get_origin(annotation) is not list or len(get_args(annotation)) != 1:
        return None
    one = plain_converter(get_args(annotation)[0], parameter_info)
    if one is None:
        return None

    def convert(value: Any) -> Any:
        if not isinstance(value, list | tuple):
            return NotImplemented
        items = [one(item) for item in value]
        return NotImplemented if NotImplemented in items else items

    return convert


def install() -> bool:
    """Wrap typer's ``build_runtime_param`` (once); False when this typer has none."""
    try:
        from typer import _coercion, core  # noqa: PLC0415
    except ImportError:
        return False
    found = getattr(core, "build_runtime_param", None)
    if found is None or getattr(found, "plain_params", False):
        return found is not None
    original: Callable[[Any], Any] = found

    @dataclass(frozen=True)
    class PlainRuntimeParam(_coercion.RuntimeParam):
        """A plain conversion, falling back to typer's own for anything else."""

        convert: Callable[[Any], Any]
        descriptor: Any

        def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
            converted = self.convert(value)
            if converted is NotImplemented:
                return original(self.descriptor)._coerce_value(value, param=param, ctx=ctx)
            return converted

    def build(descriptor: Any) -> Any:
        annotation, info = descriptor.annotation, descriptor.parameter_info
        if getattr(descriptor, "file_annotation", None) is None:
            convert = plain_converter(annotation, info) or _list_converter(annotation, info)
            if convert is not None:
                return PlainRuntimeParam(
                    parameter_info=info,
                    annotation=annotation,
                    convert=convert,
                    descriptor=descriptor,
                )
        return original(descriptor)

    build.plain_params = True  # type: ignore[attr-defined]
    build.original = original  # type: ignore[attr-defined]
    setattr(core, "build_runtime_param", build)  # noqa: B010  (typer's module, not ours)
    return True
