"""kubectl's set-based label selectors: ``key=value``, ``key==value``, ``key!=value``,
``key in (a,b)``, ``key notin (a,b)``, ``key`` (has the label) and ``!key`` (has it not),
comma-separated, every requirement to hold.

Each requirement is matched whole (``fullmatch``) and each key and value is a label
(`costart.domain.labels`); anything else is one `DomainError` naming the requirement and
the forms accepted. `equality_terms` is the part a server can filter on with its
``key=value`` selector (`costart.domain.labels.Selector`); `matches_all` decides the rest.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Final, Literal

import msgspec

from costart.domain.errors import DomainError
from costart.domain.labels import Selector, is_label

Operator = Literal["=", "!=", "in", "notin", "exists", "!exists"]
FORMS: Final = "key=value, key!=value, key in (a,b), key notin (a,b), key or !key"
_SET: Final = re.compile(r"\s*(?P<key>[^\s!=(),]+)\s+(?P<op>in|notin)\s*\((?P<values>[^()]*)\)\s*")
_COMPARE: Final = re.compile(
    r"\s*(?P<key>[^\s!=(),]+)\s*(?P<op>==|=|!=)\s*(?P<value>[^\s!=(),]+)\s*"
)
_EXISTS: Final = re.compile(r"\s*(?P<not>!?)\s*(?P<key>[^\s!=(),]+)\s*")


class Requirement(msgspec.Struct, frozen=True):
    key: str
    op: Operator
    values: tuple[str, ...] = ()

    def holds(self, labels: Mapping[str, str]) -> bool:
        value = labels.get(self.key)
        if self.op == "exists":
            return value is not None
        if self.op == "!exists":
            return value is None
        if self.op in ("=", "in"):
            return value is not None and value in self.values
        return value is None or value not in self.values  # != and notin: kubectl's


def _split(text: str) -> list[str]:
    """``text`` cut at the commas outside parentheses."""
    parts, depth, start = [], 0, 0
    for at, char in enumerate(text):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == "," and depth == 0:
            parts.append(text[start:at])
            start = at + 1
    parts.append(text[start:])
    return parts


def _bad(term: str, why: str = "") -> DomainError:
    return DomainError(f"bad label selector {term.strip()!r}{why}: expected {FORMS}")


def _label(term: str, text: str) -> str:
    if not is_label(text):
        raise _bad(term, f" ({text!r} is not a label key or value)")
    return text


def parse_requirement(term: str) -> Requirement:
    """One requirement, matched whole."""
    found = _SET.fullmatch(term)
    if found is not None:
        values = [v.strip() for v in found["values"].split(",")]
        if values == [""]:
            raise _bad(term, " (an empty set)")
        op: Operator = "in" if found["op"] == "in" else "notin"
        checked = tuple(sorted({_label(term, v) for v in values}))
        return Requirement(_label(term, found["key"]), op, checked)
    found = _COMPARE.fullmatch(term)
    if found is not None:
        op = "!=" if found["op"] == "!=" else "="
        return Requirement(_label(term, found["key"]), op, (_label(term, found["value"]),))
    found = _EXISTS.fullmatch(term)
    if found is not None:
        op = "!exists" if found["not"] else "exists"
        return Requirement(_label(term, found["key"]), op)
    raise _bad(term)


def parse_requirements(texts: Iterable[str]) -> tuple[Requirement, ...]:
    """Every requirement of every ``-l`` given (each may hold several, comma-separated)."""
    found: list[Requirement] = []
    for text in texts:
        found += [parse_requirement(term) for term in _split(text)]
    return tuple(dict.fromkeys(found))


def matches_all(labels: Mapping[str, str], requirements: Iterable[Requirement]) -> bool:
    return all(r.holds(labels) for r in requirements)


def equality_terms(requirements: Iterable[Requirement]) -> Selector:
    """The ``key=value`` requirements, as the selector a server filters by."""
    return tuple(sorted({(r.key, r.values[0]) for r in requirements if r.op == "="}))
