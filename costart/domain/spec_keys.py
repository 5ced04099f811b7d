"""The key msgspec leaves out of an error's path inside a dict-valued spec field.

msgspec names a dict's value ``[...]``: ``labels[...]: Expected `str`, got `int```, or
``members[0].run.probes[...].period``. Someone with twenty labels or five probes needs
to know which one. `name_keys` finds the key by converting the document again with that
dict cut down to one key at a time. The key whose value alone gives the same error is
the one; the path then names it the way the spec's own checks do (``labels.team``,
``members[0].run.probes.ready.period``). The search runs only when a spec is refused.
When no single key reproduces the error, the error is returned as it was: never a
wrong key.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from costart.domain.errors import SpecError

_UNNAMED = "[...]"
_STEP = re.compile(r"\.?(?P<field>[A-Za-z_][A-Za-z0-9_]*)|\[(?P<index>\d+)\]")

Convert = Callable[[Any], SpecError | None]
"""The spec's conversion of a plain document: the error it refuses it with, or None."""


def name_keys(error: SpecError, document: Any, convert: Convert) -> SpecError:
    """``error`` with each ``[...]`` in its path replaced by the dict key it stands for,
    found in ``document`` (the refused spec as plain data) with ``convert``."""
    if _UNNAMED not in error.path:
        return error
    *prefixes, tail = error.path.split(_UNNAMED)
    steps: list[str | int] = []
    named = ""
    cut = document
    for prefix in prefixes:
        parsed = _steps(prefix)
        if parsed is None:
            return error
        steps += parsed
        found = _culprit(cut, steps, error, convert)
        if found is None:
            return error
        key, cut = found
        steps.append(key)
        named += f"{prefix}.{key}"
    return SpecError(named + tail, error.reason)


def _same(found: SpecError | None, error: SpecError) -> bool:
    return found is not None and (found.path, found.reason) == (error.path, error.reason)


def _steps(prefix: str) -> list[str | int] | None:
    """``members[0].run.probes`` -> ["members", 0, "run", "probes"] (None: not a path
    of field names and indexes)."""
    steps: list[str | int] = []
    at = 0
    while at < len(prefix):
        match = _STEP.match(prefix, at)
        if match is None:
            return None
        steps.append(match["field"] if match["field"] else int(match["index"]))
        at = match.end()
    return steps


def _culprit(
    document: Any, steps: list[str | int], error: SpecError, convert: Convert
) -> tuple[str, Any] | None:
    """The key of the dict at ``steps`` whose value alone reproduces ``error``, and the
    document cut down to it; None if the path does not lead to a dict or no key does."""
    container = _at(document, steps)
    if not isinstance(container, dict):
        return None
    for key, value in container.items():
        trial = _replaced(document, steps, {key: value})
        if _same(convert(trial), error):
            return str(key), trial
    return None


def _at(document: Any, steps: list[str | int]) -> Any:
    node = document
    for step in steps:
        if isinstance(step, int):
            if not isinstance(node, list) or step >= len(node):
                return None
        elif not isinstance(node, dict) or step not in node:
            return None
        node = node[step]
    return node


def _replaced(node: Any, steps: list[str | int], value: Any) -> Any:
    """A copy of ``node`` with the value at ``steps`` replaced (copied along the path
    only; the rest is shared)."""
    if not steps:
        return value
    first, rest = steps[0], steps[1:]
    if isinstance(node, list) and isinstance(first, int):
        copy = list(node)
        copy[first] = _replaced(node[first], rest, value)
        return copy
    return {**node, first: _replaced(node[first], rest, value)}
