"""An operator's TOML file (tokens, accounts) read into its msgspec document type, every
failure raised as the caller's error naming the file."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import TypeVar

import msgspec

from costart.files import UnreadableFileError, read_named_file

T = TypeVar("T")


def read_toml(path: Path, doc_type: type[T], what: str, error: type[Exception]) -> T:
    """``path`` decoded as ``doc_type``; ``error("<what> <path>: <why>")`` when it cannot
    be read, is not TOML, or does not fit the type."""
    try:
        text = read_named_file(path, what).decode()
    except UnreadableFileError as cause:
        raise error(str(cause)) from cause
    try:
        return msgspec.convert(tomllib.loads(text), doc_type)
    except (
        UnicodeDecodeError,
        tomllib.TOMLDecodeError,
        RecursionError,
        msgspec.ValidationError,
    ) as cause:
        raise error(f"{what} {path}: {cause or type(cause).__name__}") from cause
