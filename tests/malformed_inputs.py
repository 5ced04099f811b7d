"""Hostile bodies by category, built from a valid document of the receiver, for
`tests/test_malformed_input.py`.

Each category is a strategy of `Hostile` bodies that no receiver may take: random bytes,
nesting a thousand levels and more, numbers no field holds, a valid document labelled
with a Content-Type that is not its own, truncated, not UTF-8, empty, an array or a
scalar where an object belongs, NUL bytes. Values are injected into a valid document at
one of its fields (a "slot"), so the receiver reads far enough to meet them; truncated,
non-UTF-8 and NUL-bearing documents sometimes start with a field nobody knows, which a
typed decode refuses before it meets the harm further on (the spec parser then decoded
the document again, plain, and met the harm unguarded: a 500). Every
injected value is wrong for every field of the documents used here (a count or an
attempt is a bounded positive integer; a name or a state a string): an input that
happened to be valid would be a bug of this module, and the test would say so (a 2xx).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

JSON_TYPES = [None, "application/json", "application/json; charset=utf-8"]
TOML_TYPES = ["application/toml", "application/toml; charset=utf-8"]
OTHER_TYPES = ["text/plain", "application/octet-stream", "application/x-www-form-urlencoded"]
ALL_TYPES = [*JSON_TYPES, *TOML_TYPES, *OTHER_TYPES]
# Nesting from 1,000 levels (the server's parsers give up before: its recursion limit
# is Python's default) to as deep as 60 KB of brackets go (within the spec's size limit).
# Under hypothesis the test's own process allows about 2,000 more frames than it uses,
# so there only the deeper half reaches the parsers' RecursionError.
MIN_DEPTH = 1000
BODY_BYTES = 60_000


@dataclass(frozen=True)
class Hostile:
    category: str
    body: bytes
    content_type: str | None  # None: the request has no Content-Type header
    written_as: str = "json"  # the format the body's text is in (or was, before harm)

    @property
    def read_as(self) -> str:
        """The format a receiver reads it as, for those that take the format as a word
        (`parse_spec`) or a file's suffix (`costart validate`): the one its label names,
        JSON for none. A label of neither format cannot be said that way; such a body
        is read as the format it is not written in (the mislabelling those can get)."""
        if self.content_type in TOML_TYPES:
            return "toml"
        if self.content_type in JSON_TYPES:
            return "json"
        return "toml" if self.written_as == "json" else "json"

    def headers(self) -> dict[str, str]:
        return {} if self.content_type is None else {"Content-Type": self.content_type}


@dataclass(frozen=True)
class Document:
    """A valid document of a receiver, as JSON and as TOML. Every proper prefix of
    ``toml`` must be invalid (no trailing newline; its last line a required field)."""

    json: dict[str, Any]
    toml: str

    def text(self, fmt: str) -> str:
        return json.dumps(self.json) if fmt == "json" else self.toml


def flat_document(fields: dict[str, Any]) -> Document:
    """A document of scalar fields (a report)."""
    toml = "\n".join(f"{key} = {json.dumps(value)}" for key, value in fields.items())
    return Document(fields, toml)


_SLOT = "@@slot@@"


def _json_paths(node: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every value's path below the root."""
    paths = [path] if path else []
    if isinstance(node, dict):
        for key, value in node.items():
            paths += _json_paths(value, (*path, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            paths += _json_paths(value, (*path, index))
    return paths


def _replaced(node: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    copy = dict(node) if isinstance(node, dict) else list(node)
    copy[path[0]] = _replaced(node[path[0]], path[1:], value)
    return copy


def _toml_value_lines(toml: str) -> list[int]:
    return [i for i, line in enumerate(toml.split("\n")) if " = " in line]


@st.composite
def _in_a_slot(draw: st.DrawFn, doc: Document, fmt: str, raw: str) -> bytes:
    """``doc`` in ``fmt`` with the value of one of its fields replaced by ``raw`` text."""
    if fmt == "json":
        path = draw(st.sampled_from(_json_paths(doc.json)))
        text = json.dumps(_replaced(doc.json, path, _SLOT)).replace(f'"{_SLOT}"', raw)
        return text.encode()
    lines = doc.toml.split("\n")
    at = draw(st.sampled_from(_toml_value_lines(doc.toml)))
    lines[at] = f"{lines[at].split(' = ', 1)[0]} = {raw}"
    return "\n".join(lines).encode()


@st.composite
def _document_text(draw: st.DrawFn, doc: Document, fmt: str) -> str:
    """``doc`` in ``fmt``, or with a field no receiver knows before its own fields: a
    typed decode refuses that field before it meets the harm done further on, and
    whatever reads the document again then meets the harm alone."""
    if not draw(st.booleans()):
        return doc.text(fmt)
    if fmt == "json":
        return json.dumps({"x-unknown": [1], **doc.json})
    return f"x-unknown = [1]\n{doc.toml}"


def _matching(fmt: str) -> st.SearchStrategy[str | None]:
    return st.sampled_from(JSON_TYPES if fmt == "json" else TOML_TYPES)


_FORMATS = st.sampled_from(["json", "toml"])


@st.composite
def random_bytes(draw: st.DrawFn, doc: Document) -> Hostile:
    # Alone, or after the start of a JSON array or of an object with a wrong field.
    start = draw(st.sampled_from([b"", b"[", b'{"x-unknown": 1, ']))
    body = start + draw(st.binary(min_size=1, max_size=300))
    return Hostile("random-bytes", body, draw(st.sampled_from(ALL_TYPES)))


@st.composite
def deep_nesting(draw: st.DrawFn, doc: Document) -> Hostile:
    fmt = draw(_FORMATS)
    opening = draw(st.sampled_from(["[", '{"a":' if fmt == "json" else "{a="]))
    closing = "]" if opening == "[" else "}"
    depth = draw(st.integers(MIN_DEPTH, BODY_BYTES // (len(opening) + 1)))
    raw = opening * depth + ("" if opening == "[" else "1") + closing * depth
    if draw(st.booleans()):  # the whole body, or one field of the document
        body = (raw if fmt == "json" else f"x = {raw}").encode()
    else:
        body = draw(_in_a_slot(doc, fmt, raw))
    return Hostile("deep-nesting", body, draw(_matching(fmt)), fmt)


_HUGE = {
    "json": ["1e400", "-1e400", "1" + "0" * 400, "-" + "9" * 400, "9" * 5000, "-" + "9" * 5000,
             "1e-400", "1.5e99999"],
    "toml": ["inf", "-inf", "+inf", "nan", "1e400", "-1e400", "1" + "0" * 400,
             "-" + "9" * 400, "9" * 5000, "-" + "9" * 5000, "0x" + "f" * 400],
}  # fmt: skip


@st.composite
def huge_number(draw: st.DrawFn, doc: Document) -> Hostile:
    fmt = draw(_FORMATS)
    body = draw(_in_a_slot(doc, fmt, draw(st.sampled_from(_HUGE[fmt]))))
    return Hostile("huge-number", body, draw(_matching(fmt)), fmt)


@st.composite
def wrong_content_type(draw: st.DrawFn, doc: Document) -> Hostile:
    fmt = draw(_FORMATS)
    others = (TOML_TYPES if fmt == "json" else JSON_TYPES) + OTHER_TYPES
    label = draw(st.sampled_from(others))
    return Hostile("wrong-content-type", doc.text(fmt).encode(), label, fmt)


@st.composite
def truncated(draw: st.DrawFn, doc: Document) -> Hostile:
    fmt = draw(_FORMATS)
    text = draw(_document_text(doc, fmt)).encode()
    cut = draw(st.integers(1, len(text) - 1))
    return Hostile("truncated", text[:cut], draw(_matching(fmt)), fmt)


_NOT_UTF8 = [b"\xff", b"\xfe", b"\x80", b"\xc3\x28", b"\xed\xa0\x80", b"\xf8\x88\x80\x80\x80"]


@st.composite
def not_utf8(draw: st.DrawFn, doc: Document) -> Hostile:
    fmt = draw(_FORMATS)
    text = draw(_document_text(doc, fmt))
    if draw(st.booleans()):  # the whole document in another encoding
        body = text.encode(draw(st.sampled_from(["utf-16", "utf-32", "utf-16-be"])))
    else:  # one bad sequence anywhere (inside a string too)
        at = draw(st.integers(0, len(text)))
        bad = draw(st.sampled_from(_NOT_UTF8))
        body = text[:at].encode() + bad + text[at:].encode()
    return Hostile("not-utf8", body, draw(_matching(fmt)), fmt)


@st.composite
def empty(draw: st.DrawFn, doc: Document) -> Hostile:
    fmt = draw(_FORMATS)
    body = draw(st.sampled_from([b"", b" ", b"\n", b" \t\r\n "]))
    return Hostile("empty", body, draw(_matching(fmt)), fmt)


@st.composite
def wrong_top_level(draw: st.DrawFn, doc: Document) -> Hostile:
    whole = json.dumps(doc.json)
    body = draw(st.sampled_from(["[]", f"[{whole}]", '"text"', "1", "null", "true", "-0.5"]))
    return Hostile("wrong-top-level", body.encode(), draw(_matching("json")))


@st.composite
def null_bytes(draw: st.DrawFn, doc: Document) -> Hostile:
    fmt = draw(_FORMATS)
    body = draw(_document_text(doc, fmt)).encode()
    for _ in range(draw(st.integers(1, 3))):
        at = draw(st.integers(0, len(body)))
        body = body[:at] + b"\x00" + body[at:]
    if draw(st.integers(0, 9)) == 0:
        body = b"\x00" * len(body)
    return Hostile("null-bytes", body, draw(_matching(fmt)), fmt)


CATEGORIES: dict[str, Callable[[Document], st.SearchStrategy[Hostile]]] = {
    "random-bytes": random_bytes,
    "deep-nesting": deep_nesting,
    "huge-number": huge_number,
    "wrong-content-type": wrong_content_type,
    "truncated": truncated,
    "not-utf8": not_utf8,
    "empty": empty,
    "wrong-top-level": wrong_top_level,
    "null-bytes": null_bytes,
}


CATEGORY_NAMES = st.sampled_from(list(CATEGORIES))


def hostile(doc: Document, category: str | None = None) -> st.SearchStrategy[Hostile]:
    """A hostile body of ``category`` (any, each as likely), built from ``doc``."""
    if category is not None:
        return CATEGORIES[category](doc)
    return CATEGORY_NAMES.flatmap(lambda name: CATEGORIES[name](doc))
