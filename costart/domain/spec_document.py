"""A spec's bytes as a TOML or JSON document, or a `SpecError` saying why they are not one.

Whatever a client sends ends here first, so every way bytes can fail to be a document
is one `SpecError` with an empty path: over the size limit, text that is not Unicode,
broken syntax, nesting too deep for the parsers, numbers too large to read. Only
`msgspec.ValidationError` passes through: the document was read, and its shape is wrong
at a field `costart.domain.spec` names.
"""

from __future__ import annotations

from typing import Any

import msgspec

from costart.domain import limits
from costart.domain.errors import SpecError

SPEC_FORMATS = ("toml", "json")


def spec_bytes(data: bytes | str) -> bytes:
    """``data`` as UTF-8 bytes within `limits.MAX_SPEC_BYTES`."""
    if isinstance(data, str):
        try:
            data = data.encode()
        except UnicodeEncodeError as error:
            # A lone surrogate: no UTF-8 spells it, so no parser could read it.
            raise SpecError(
                "", f"not Unicode text: {error.reason} at character {error.start}"
            ) from None
    if len(data) > limits.MAX_SPEC_BYTES:
        raise SpecError("", f"spec is {len(data)} bytes; the limit is {limits.MAX_SPEC_BYTES}")
    return data


def decode_document(raw: bytes, fmt: str, type_: Any = Any) -> Any:
    """``raw`` decoded as ``fmt`` into ``type_`` (``Any``: plain dicts and lists).

    Raises `SpecError` when ``raw`` is no document at all, and `msgspec.ValidationError`
    when it is one whose shape ``type_`` refuses."""
    if fmt not in SPEC_FORMATS:
        raise SpecError("", f"unknown spec format {fmt!r} (expected toml or json)")
    name = fmt.upper()
    try:
        if fmt == "toml":
            return msgspec.toml.decode(raw, type=type_)
        return msgspec.json.decode(raw, type=type_)
    except msgspec.ValidationError:
        raise
    except msgspec.DecodeError as error:
        raise SpecError("", f"not valid {name}: {error}") from None
    except RecursionError:
        # Both parsers recurse once per array or table level: a body of a thousand
        # nested brackets reaches the interpreter's limit long before the size limit.
        # No spec nests more than a handful of levels, so the document is refused
        # whole; the parser holds no state that the unwound recursion could leave behind.
        raise SpecError("", f"not valid {name}: nested too deeply to read") from None
    except ValueError as error:
        # The TOML parser converts integers with int(), which refuses more than
        # sys.get_int_max_str_digits() digits with a plain ValueError (JSON's parser
        # says "Integer value out of range" as a ValidationError itself).
        reason = str(error).split(":", 1)[0]
        raise SpecError("", f"not valid {name}: {reason}") from None
