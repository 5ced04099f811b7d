"""Bytes that are no spec document are one `SpecError` naming the problem, in either
format: never a RecursionError, a msgspec error or a ValueError out of `parse_spec`
(each case below once escaped it). The property test over many more such inputs is
`tests/test_malformed_input.py`."""

from __future__ import annotations

import pytest

from costart.domain import limits
from costart.domain.errors import SpecError
from costart.domain.spec import parse_spec

HEAD = b'{"name": "g", "owner": "alice", '
DEEP = b"[" * 1000 + b"]" * 1000
TOML_HEAD = b'name = "g"\nowner = "alice"\n'

CASES = [
    # (bytes, format, the path named, words of the reason)
    (DEEP, "json", "", "nested too deeply"),
    (HEAD + b'"labels": {"x": ' + DEEP + b"}}", "json", "", "nested too deeply"),
    # The typed decode refuses the unknown field before reaching the depth; the plain
    # decode (for the key names) cannot read the document at all, and says so.
    (HEAD + b'"colour": ' + DEEP + b"}", "json", "", "nested too deeply"),
    (TOML_HEAD + b"labels = { x = " + b"[" * 1000 + b"]" * 1000 + b" }", "toml", "", "nested"),
    (TOML_HEAD + b"x = " + b"{a=" * 1000 + b"1" + b"}" * 1000, "toml", "", "nested too deeply"),
    (HEAD + b'"priority": 1e400}', "json", "priority", "Number out of range"),
    (HEAD + b'"priority": -1e400}', "json", "priority", "Number out of range"),
    (HEAD + b'"priority": ' + b"9" * 5000 + b"}", "json", "priority", "out of range"),
    (HEAD + b'"labels": {"x": 1e400}}', "json", "labels[...]", "Number out of range"),
    (TOML_HEAD + b"priority = " + b"9" * 5000, "toml", "", "4300 digits"),
    (TOML_HEAD + b"priority = inf", "toml", "priority", "got `float`"),
    (b"1e400", "json", "", "Number out of range"),
    # The typed decode stops at its first wrong field; the syntax error after it is the
    # error (a TOML body read as JSON; a truncated or non-UTF-8 document).
    (b'[group]\nname = "g"\n', "json", "", "not valid JSON"),
    (b'{"attempt": 1, "sta', "json", "", "not valid JSON: Input data was truncated"),
    (b'{"attempt": 1, "status": "\xff"}', "json", "", "not valid JSON"),
    (b'{"attempt": 1, "status": "READY\x00"}', "json", "", "not valid JSON"),
    (b'{"name": "g"}', "toml", "", "not valid TOML"),
    (b"\xff\xfe", "toml", "", "not valid TOML"),
    (b"", "json", "", "not valid JSON: Input data was truncated"),
    (b"[]", "json", "", "Expected `object`, got `array`"),
    (b" " * (limits.MAX_SPEC_BYTES + 1), "json", "", "the limit is"),
    ('{"name": "\ud800"}', "json", "", "not Unicode text"),
]


@pytest.mark.parametrize(("data", "fmt", "path", "reason"), CASES)
def test_bytes_that_are_no_spec_are_one_spec_error_naming_the_problem(data, fmt, path, reason):
    with pytest.raises(SpecError) as refused:
        parse_spec(data, fmt)
    assert refused.value.path == path
    assert reason in refused.value.reason


def test_an_unknown_format_is_a_spec_error():
    with pytest.raises(SpecError, match="unknown spec format 'yaml'"):
        parse_spec(b"name: g", "yaml")  # type: ignore[arg-type]
