"""Group labels and the ``key=value`` selectors that pick groups by them.

A label key and value each match `limits.LABEL_PATTERN` whole (``fullmatch``); a group
has at most `limits.MAX_LABELS_PER_GROUP`. A spec keeps them sorted by key, so their
encoding never depends on the order a document listed them in.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Final

from costart.domain import limits
from costart.domain.errors import DomainError, SpecError

Labels = tuple[tuple[str, str], ...]
"""A group's labels, sorted by key."""
Selector = tuple[tuple[str, str], ...]
"""Every ``key=value`` a group's labels must hold (all of them)."""

_LABEL: Final = re.compile(limits.LABEL_PATTERN)


def is_label(text: str) -> bool:
    return _LABEL.fullmatch(text) is not None


def check_labels(path: str, labels: Mapping[str, str]) -> Labels:
    """A spec's ``labels`` table, validated, sorted by key; `SpecError` names the key."""
    if len(labels) > limits.MAX_LABELS_PER_GROUP:
        raise SpecError(path, f"{len(labels)} labels; the limit is {limits.MAX_LABELS_PER_GROUP}")
    for key, value in labels.items():
        if not is_label(key):
            raise SpecError(f"{path}.{key}", f"bad label key {key!r}: {_RULE}")
        if not is_label(value):
            raise SpecError(f"{path}.{key}", f"bad label value {value!r}: {_RULE}")
    return tuple(sorted(labels.items()))


def parse_selector(texts: Iterable[str]) -> Selector:
    """``key=value`` terms (each text may hold several, comma-separated) as a selector,
    every term of which must hold; `DomainError` naming the term that is not one."""
    terms: set[tuple[str, str]] = set()
    for text in texts:
        for term in text.split(","):
            key, sep, value = term.partition("=")
            if not sep or not is_label(key) or not is_label(value):
                raise DomainError(f"bad label selector {term!r}: expected key=value ({_RULE})")
            # Every term must hold (kubectl's AND): two values for one key select nothing.
            terms.add((key, value))
    return tuple(sorted(terms))


def matches(labels: Mapping[str, str], selector: Selector) -> bool:
    """True when ``labels`` hold every term of ``selector`` (an empty one picks all)."""
    return all(labels.get(key) == value for key, value in selector)


_RULE: Final = "1-253 letters, digits, '.', '/' or '-', starting and ending with a letter or digit"
