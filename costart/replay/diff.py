"""Field-by-field differences between two states: `replay diff`, and the first
divergence that `replay verify` reports."""

from __future__ import annotations

from typing import Any

import msgspec

from costart.display import clock
from costart.domain.world import World


class FieldChange(msgspec.Struct, frozen=True):
    """One differing field. ``aggregate`` is ``group NAME`` or ``member GROUP/NAME``."""

    aggregate: str
    field: str
    before: Any
    after: Any


def value_text(field: str, value: Any) -> str:
    """A field's value as a person reads it, whole: times as clock times, absent as
    ``-``, text as is, structures as compact JSON (never a cut Python repr)."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int) and field.rsplit(".", 1)[-1].endswith("_ns"):
        return clock(value)
    if isinstance(value, str):
        return value
    return msgspec.json.encode(value).decode()


def _label(kind: str, world: World, key: str) -> str:
    if kind == "groups":
        return f"group {world.groups[key].name}"
    if kind == "members":
        member = world.members[key]
        group = world.groups.get(str(member.group_id))
        return f"member {group.name if group else '?'}/{member.name}"
    return kind


def _walk(prefix: str, a: Any, b: Any, out: list[tuple[str, Any, Any]]) -> None:
    """Down to the fields that differ: into objects by key and into lists by index
    (``tasks[3].state``), so a change reads as one value, never a whole array."""
    # An object or list that appeared or went is walked against an empty one.
    if isinstance(a, dict | list) and b is None:
        b = type(a)()
    elif isinstance(b, dict | list) and a is None:
        a = type(b)()
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b)):
            _walk(f"{prefix}.{key}" if prefix else str(key), a.get(key), b.get(key), out)
    elif isinstance(a, list) and isinstance(b, list):
        for i in range(max(len(a), len(b))):
            _walk(
                f"{prefix}[{i}]",
                a[i] if i < len(a) else None,
                b[i] if i < len(b) else None,
                out,
            )
    elif a != b:
        out.append((prefix, a, b))


def _history_fields(world: World) -> dict[str, Any]:
    """The runtime history by key and field name (its rows encode as arrays)."""
    return {
        key: {"used": entry.used, "samples": entry.samples}
        for key, entry in world.runtime_history.keys.items()
    }


def diff_worlds(before: World, after: World, *, limit: int | None = None) -> list[FieldChange]:
    """Changed fields of every group and member (and the top-level counters), in a stable
    order: groups by submission, members by id. ``limit`` stops early."""
    changes: list[FieldChange] = []
    for kind in ("groups", "members"):
        old: dict[str, Any] = getattr(before, kind)
        new: dict[str, Any] = getattr(after, kind)
        for key in sorted(set(old) | set(new)):
            a = msgspec.to_builtins(old[key]) if key in old else None
            b = msgspec.to_builtins(new[key]) if key in new else None
            label = _label(kind, after if key in new else before, key)
            found: list[tuple[str, Any, Any]] = []
            if a is None or b is None:
                found.append(("(exists)", a is not None, b is not None))
            else:
                _walk("", a, b, found)
            changes += [FieldChange(label, field, x, y) for field, x, y in found]
            if limit is not None and len(changes) >= limit:
                return changes[:limit]
    # The runtime history (ADR 0111), key by key: derived from the events above, so it
    # differs alone only when a snapshot's history does not match its log.
    found = []
    _walk("", _history_fields(before), _history_fields(after), found)
    changes += [FieldChange("runtime history", field, x, y) for field, x, y in found]
    for field in ("submissions", "clock_ns", "position"):
        a, b = getattr(before, field), getattr(after, field)
        if a != b:
            changes.append(FieldChange("world", field, a, b))
    return changes if limit is None else changes[:limit]
