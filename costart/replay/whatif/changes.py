"""``--set KEY=VALUE``: a spec placement setting changed for every group of a what-if.

Each change is matched whole (``re.fullmatch``) against the keys below; a bad key or
value is refused naming it, before anything is run or written.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import get_args

import msgspec

from costart.domain.durations import parse_duration_ns
from costart.domain.spec_types import GroupSpec, PlacementMode
from costart.replay.whatif.options import WhatIfError

_CHANGE = re.compile(r"(?P<key>[a-z_.]+)=(?P<value>.+)")
MODES: tuple[str, ...] = get_args(PlacementMode)


class Change(msgspec.Struct, frozen=True):
    """One setting as given (``placement.timeout=5m``) and its parsed value."""

    key: str
    text: str
    value: int | str

    def __str__(self) -> str:
        return f"{self.key}={self.text}"


def _duration(key: str, text: str) -> int:
    try:
        ns = parse_duration_ns(text)
    except ValueError as error:
        raise WhatIfError(f"--set {key}={text}: {error}") from None
    if ns <= 0:
        raise WhatIfError(f"--set {key}={text}: must be longer than 0s")
    return ns


def _mode(key: str, text: str) -> str:
    if text not in MODES:
        raise WhatIfError(f"--set {key}={text}: unknown mode (one of {', '.join(MODES)})")
    return text


def _attempts(key: str, text: str) -> int:
    if not re.fullmatch(r"[1-9][0-9]{0,5}", text):
        raise WhatIfError(f"--set {key}={text}: a whole number of attempts, 1 or more")
    return int(text)


def _placement(field: str) -> Callable[[GroupSpec, int | str], GroupSpec]:
    def apply(spec: GroupSpec, value: int | str) -> GroupSpec:
        placement = msgspec.structs.replace(spec.placement, **{field: value})
        return msgspec.structs.replace(spec, placement=placement)

    return apply


def _barrier(spec: GroupSpec, value: int | str) -> GroupSpec:
    barrier = msgspec.structs.replace(spec.barrier, timeout_ns=value)
    return msgspec.structs.replace(spec, barrier=barrier)


# key -> (parse the value, apply it to a spec)
SPEC_SETTINGS: dict[
    str, tuple[Callable[[str, str], int | str], Callable[[GroupSpec, int | str], GroupSpec]]
] = {
    "placement.mode": (_mode, _placement("mode")),
    "placement.timeout": (_duration, _placement("timeout_ns")),
    "placement.backoff": (_duration, _placement("backoff_ns")),
    "placement.backoff_max": (_duration, _placement("backoff_max_ns")),
    "placement.max_attempts": (_attempts, _placement("max_attempts")),
    "barrier.timeout": (_duration, _barrier),
}


def parse_change(text: str) -> Change:
    """``KEY=VALUE`` as a `Change`; `WhatIfError` naming the bad key or value."""
    match = _CHANGE.fullmatch(text)
    if match is None:
        raise WhatIfError(f"--set {text!r}: expected KEY=VALUE, e.g. placement.timeout=5m")
    key, value = match["key"], match["value"]
    if key not in SPEC_SETTINGS:
        raise WhatIfError(f"--set {key}: unknown setting (one of {', '.join(SPEC_SETTINGS)})")
    return Change(key, value, SPEC_SETTINGS[key][0](key, value))


def parse_changes(texts: list[str]) -> list[Change]:
    """Every ``--set``, checked; a key given twice is refused."""
    changes = [parse_change(t) for t in texts]
    keys = [c.key for c in changes]
    twice = sorted({k for k in keys if keys.count(k) > 1})
    if twice:
        raise WhatIfError(f"--set {', '.join(twice)}: given more than once")
    return changes


def changed_spec(spec: GroupSpec, changes: list[Change]) -> GroupSpec:
    """``spec`` with every change applied; a change that breaks a rule between
    settings (a backoff longer than its cap) is refused naming the group."""
    for change in changes:
        spec = SPEC_SETTINGS[change.key][1](spec, change.value)
    placement = spec.placement
    if placement.backoff_ns > placement.backoff_max_ns:
        raise WhatIfError(
            f"--set: {spec.name}'s placement.backoff would exceed its placement.backoff_max"
        )
    return spec
