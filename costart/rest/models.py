"""The REST API's own bodies (the view rows of `costart.projections` are the rest)."""

from __future__ import annotations

from typing import Annotated, Final

import msgspec
from litestar.openapi.spec import Example
from litestar.params import Parameter, ParameterKwarg
from msgspec import Meta

from costart.domain import limits
from costart.rest.problems import ProblemDetails


def _examples(example: object) -> list[Example] | None:
    return None if example is None else [Example(value=example)]


def name_in_path(example: str | None = None) -> ParameterKwarg:
    """A group, member or claim name in a URL path, declared as the spec's name rule (the
    handlers still match it whole: a ``$`` also matches before a final newline)."""
    kwarg: ParameterKwarg = Parameter(
        description="a name: 1-63 of a-z, 0-9 and '-', starting and ending with a letter or digit",
        max_length=limits.MAX_NAME_LENGTH,
        pattern=f"^{limits.NAME_PATTERN}$",
        examples=_examples(example),
    )
    return kwarg


NAME_IN_PATH = name_in_path()
NODE_CHARS: Final = 253
NODE_PATTERN: Final = r"^[A-Za-z0-9]([A-Za-z0-9._-]{0,251}[A-Za-z0-9])?$"


def node_in_path(example: str | None = None) -> ParameterKwarg:
    kwarg: ParameterKwarg = Parameter(
        description="a node name: 1-253 letters, digits, '.', '_' or '-', starting and "
        "ending with a letter or digit",
        max_length=NODE_CHARS,
        pattern=NODE_PATTERN,
        examples=_examples(example),
    )
    return kwarg


ErrorBody = ProblemDetails
"""Every error response: an RFC 9457 problem document (`costart.rest.problems`)."""


class Health(msgspec.Struct, frozen=True):
    status: Annotated[str, Meta(description="ok when the server answers")]
    position: Annotated[int, Meta(description="the log position its views have read")]
