"""The decisions of a log, as a stream two logs can be compared by (ADR 0131).

A decision is every event the controller wrote of its own accord — a placement, a
hold, a release, a barrier release, a timeout, a pend reason, a failure handled, a
member stopped — as opposed to the inputs (`INPUT_EVENTS`). Each is named by what
survives a re-run: its time, its type, the group's and member's names and its own
fields (nodes, reasons, deadlines, attempts), never ids, actors or idempotency keys.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import msgspec

from costart.display import clock
from costart.domain import events as ev
from costart.domain.ids import id_text
from costart.replay.whatif.workload import INPUT_EVENTS

# Fields that name who or which record, not what was decided.
_LEFT_OUT = ("originator_id", "originator_version", "group_id", "at_ns", "actor", "key", "note")


class Decision(msgspec.Struct, frozen=True, order=True):
    """One decision: ``detail`` is its own fields as sorted JSON."""

    at_ns: int
    kind: str
    group: str
    member: str
    detail: str

    def text(self, who: str | None = None) -> str:
        """For people: the fields as ``key=value``, times as clock text, not ns; ``who``
        names the group and member otherwise (default: ``group/member``)."""
        if who is None:
            who = f"{self.group}/{self.member}" if self.member else self.group
        fields = readable(msgspec.json.decode(self.detail))
        shown = " ".join(f"{k}={_value(v)}" for k, v in fields.items())
        return f"{self.kind} {who} {shown}".rstrip()


def readable(value: Any) -> Any:
    """``value`` with every ``*_ns`` field a time as people read it (`clock`)."""
    if isinstance(value, dict):
        return {
            (k.removesuffix("_ns") if k.endswith("_ns") else k): (
                clock(v) if k.endswith("_ns") and isinstance(v, int) else readable(v)
            )
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [readable(v) for v in value]
    return value


def _value(value: Any) -> str:
    return value if isinstance(value, str) else msgspec.json.encode(value).decode()


def decisions(events: Iterable[tuple[int, ev.DomainEvent]]) -> list[Decision]:
    """Every decision of a log, in log order."""
    groups: dict[str, str] = {}
    members: dict[str, str] = {}
    out: list[Decision] = []
    for _, event in events:
        if isinstance(event, ev.GroupSubmitted):
            groups[id_text(event.originator_id)] = event.spec.name
            for spec, member_id in zip(event.spec.members, event.member_ids, strict=True):
                members[id_text(member_id)] = spec.name
        if type(event) in INPUT_EVENTS or isinstance(event, ev.NodeStatusChanged):
            continue
        fields = msgspec.to_builtins(event)
        for name in _LEFT_OUT:
            fields.pop(name, None)
        fields.pop("type", None)
        out.append(
            Decision(
                event.at_ns,
                type(event).__name__,
                groups.get(id_text(event.group_id), "?"),
                members.get(id_text(event.originator_id), ""),
                msgspec.json.encode(fields, order="sorted").decode(),
            )
        )
    return out


class Divergence(msgspec.Struct, frozen=True):
    """Where two decision streams part: the ``index``-th decision of each (None: that
    stream ended first)."""

    index: int
    recorded: Decision | None
    whatif: Decision | None


def first_divergence(recorded: Sequence[Decision], whatif: Sequence[Decision]) -> Divergence | None:
    """The first decision that differs, None when the streams are equal."""
    for index in range(max(len(recorded), len(whatif))):
        a = recorded[index] if index < len(recorded) else None
        b = whatif[index] if index < len(whatif) else None
        if a != b:
            return Divergence(index, a, b)
    return None


def differing(recorded: Sequence[Decision], whatif: Sequence[Decision]) -> int:
    """How many decisions one stream has and the other has not (a multiset difference:
    the same decision at the same time in both counts as equal)."""
    left: dict[Decision, int] = {}
    for d in recorded:
        left[d] = left.get(d, 0) + 1
    extra = 0
    for d in whatif:
        if left.get(d, 0):
            left[d] -= 1
        else:
            extra += 1
    return extra + sum(left.values())
