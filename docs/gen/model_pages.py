"""The event catalogue and the state diagrams, from the domain's own tables.

Which event may happen in which state is `costart.domain.transitions` (``GROUP_FROM``,
``MEMBER_FROM``); the state an event leads to is read from the fold's handlers
(`costart.domain.fold`: the status each assigns, and whether it may keep the state
instead); who writes an event is every domain module whose code names it, outside the
event, transition and fold modules themselves.
"""

from __future__ import annotations

import ast
import inspect
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Literal

import msgspec

from costart.domain import events as ev
from costart.domain import fold, spec_types, states, transitions
from docs.gen.markdown import GENERATED, cell, code, table

Aggregate = Literal["group", "member"]
DOMAIN = Path(fold.__file__).parent
_NOT_WRITERS = frozenset({"events", "transitions", "fold", "invariants", "__init__", "states"})


@dataclass(frozen=True)
class Leads:
    """Where an event takes its aggregate: the statuses it may assign and whether it may
    also leave the status as it was."""

    to: tuple[str, ...]
    may_stay: bool


def _status_literals(node: ast.AST, event: str) -> list[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.IfExp):
        return _status_literals(node.body, event) + _status_literals(node.orelse, event)
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Dict):
        # {ev.GroupSucceeded: "SUCCEEDED", ...}[type(e)]: the entry of this event.
        return [
            v.value
            for k, v in zip(node.value.keys, node.value.values, strict=True)
            if isinstance(k, ast.Attribute) and k.attr == event and isinstance(v, ast.Constant)
        ]
    return []


def _leads(function: ast.FunctionDef, event: str) -> Leads:
    """The statuses ``function`` assigns for ``event``; it may keep the status when an
    assignment sits under an ``if`` or a ``return`` comes before the first one."""
    to: list[str] = []
    guarded = False
    first = None
    for parent in ast.walk(function):
        for child in ast.iter_child_nodes(parent):
            target = child.targets[0] if isinstance(child, ast.Assign) else None
            if isinstance(target, ast.Attribute) and target.attr == "status":
                found = _status_literals(child.value, event)
                if found:
                    to += found
                    guarded = guarded or isinstance(parent, ast.If)
                    first = child.lineno if first is None else min(first, child.lineno)
    early = any(
        isinstance(n, ast.Return) and (first is None or n.lineno < first)
        for n in ast.walk(function)
    )
    return Leads(tuple(dict.fromkeys(to)), guarded or early or not to)


@cache
def _fold_functions() -> dict[str, ast.FunctionDef]:
    tree = ast.parse(Path(fold.__file__).read_text(encoding="utf-8"))
    return {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}


def leads(aggregate: Aggregate, event: type[ev.DomainEvent]) -> Leads:
    handlers = fold._GROUP_HANDLERS if aggregate == "group" else fold._MEMBER_HANDLERS
    return _leads(_fold_functions()[handlers[event].__name__], event.__name__)


def table_of(aggregate: Aggregate) -> dict[type[ev.DomainEvent], frozenset[str]]:
    source = transitions.GROUP_FROM if aggregate == "group" else transitions.MEMBER_FROM
    return {event: frozenset(allowed) for event, allowed in source.items()}


def edges(aggregate: Aggregate) -> list[tuple[str, str, str]]:
    """(from, event, to) for every change of status the tables allow, in status order."""
    order = states.GROUP_STATUSES if aggregate == "group" else states.MEMBER_STATUSES
    found = []
    for event, allowed in table_of(aggregate).items():
        for target in leads(aggregate, event).to:
            found += [(s, event.__name__, target) for s in allowed if s != target]
    return sorted(set(found), key=lambda e: (order.index(e[0]), order.index(e[2]), e[1]))


def state_diagram(aggregate: Aggregate) -> str:
    """The aggregate's states as a text diagram: each status, the events that may leave
    it and where they go, then the events that never change a status."""
    order = states.GROUP_STATUSES if aggregate == "group" else states.MEMBER_STATUSES
    terminal = states.GROUP_TERMINAL if aggregate == "group" else states.MEMBER_TERMINAL
    out = edges(aggregate)
    width = max(len(e[1]) for e in out) + 4
    lines = []
    for status in order:
        leaving = [e for e in out if e[0] == status]
        mark = (
            "  (ends the attempt)"
            if aggregate == "member" and status in terminal
            else ("  (terminal)" if status in terminal else "")
        )
        lines.append(f"{status}{mark}")
        lines += [f"  ──{event.ljust(width, '─')}▶ {to}" for _, event, to in leaving]
    never = sorted(e.__name__ for e in table_of(aggregate) if not leads(aggregate, e).to)
    lines.append(f"never change the status: {', '.join(never)}")
    title = "Group" if aggregate == "group" else "Member"
    return (
        f'```text title="{title} states (from costart/domain/transitions.py and fold.py)"\n'
        + "\n".join(lines)
        + "\n```\n"
    )


def _writers() -> dict[str, list[str]]:
    found: dict[str, set[str]] = {}
    for path in sorted(DOMAIN.glob("*.py")):
        if path.stem in _NOT_WRITERS:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        annotations = {
            id(n)
            for a in ast.walk(tree)
            for ann in (getattr(a, "annotation", None), getattr(a, "returns", None))
            if ann is not None
            for n in ast.walk(ann)
        }
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id == "ev"
                and id(node) not in annotations
            ):
                found.setdefault(node.attr, set()).add(path.stem)
    return {name: sorted(modules) for name, modules in found.items()}


def _module_line(stem: str) -> str:
    doc = ast.get_docstring(ast.parse((DOMAIN / f"{stem}.py").read_text(encoding="utf-8"))) or ""
    return doc.split("\n\n", 1)[0].replace("\n", " ")


def _fields(event: type[ev.DomainEvent]) -> str:
    base = {f.name for f in msgspec.structs.fields(ev.DomainEvent)}
    own = [f for f in msgspec.structs.fields(event) if f.name not in base]
    return ", ".join(code(f.name) for f in own) or "none beyond the common ones"


def _following(aggregate: Aggregate, event: type[ev.DomainEvent], allowed: frozenset[str]) -> str:
    where = leads(aggregate, event)
    after = set(where.to) | (set(allowed) if where.may_stay else set())
    nxt = sorted(
        other.__name__ for other, from_states in table_of(aggregate).items() if from_states & after
    )
    terminal = states.GROUP_TERMINAL if aggregate == "group" else states.MEMBER_TERMINAL
    if after and after <= terminal:
        return "nothing: the state is terminal"
    return ", ".join(nxt) or "nothing"


def events_page() -> str:
    writers = _writers()
    parts = [
        GENERATED,
        "# Event catalogue\n",
        "Every event the log holds, read from `costart/domain/events.py`. Each carries the"
        " aggregate it belongs to (`originator_id`, `originator_version`), its group"
        " (`group_id`), the controller time `at_ns`, and, when a command from outside"
        " caused it, the `actor` that sent it (a user, an agent, the host); `note` says"
        " why when the fields do not. *Written by* lists the domain modules that emit it;"
        " *in states* and *then* come from the transition tables: the statuses in which it"
        " may happen, and the events that may follow it.\n",
    ]
    writer_modules = sorted({m for ms in writers.values() for m in ms})
    for aggregate in ("group", "member"):
        title = "Group events" if aggregate == "group" else "Member events"
        parts.append(f"## {title}\n")
        for event, allowed in table_of(aggregate).items():
            where = leads(aggregate, event)
            to = ", ".join(where.to) if where.to else "unchanged"
            if where.to and where.may_stay:
                to += " (in some cases: unchanged)"
            parts += [
                f"### {event.__name__}\n",
                (inspect.getdoc(event) or "").split("\n\n", 1)[0] + "\n",
                table(
                    ("", ""),
                    [
                        ("fields", _fields(event)),
                        (
                            "written by",
                            ", ".join(
                                code(f"domain/{m}.py") for m in writers.get(event.__name__, [])
                            ),
                        ),
                        ("in states", ", ".join(sorted(allowed))),
                        ("leads to", to),
                        ("then", _following(aggregate, event, allowed)),
                    ],
                ),
            ]
    others = [
        e
        for e in vars(ev).values()
        if isinstance(e, type)
        and issubclass(e, ev.DomainEvent)
        and e is not ev.DomainEvent
        and e not in transitions.GROUP_FROM
        and e not in transitions.MEMBER_FROM
    ]
    parts.append("## Events outside the state tables\n")
    parts.append(
        "These start an aggregate or belong to the cluster's own stream; no status gates them.\n"
    )
    for event in others:
        parts += [
            f"### {event.__name__}\n",
            (inspect.getdoc(event) or "").split("\n\n", 1)[0] + "\n",
            table(
                ("", ""),
                [
                    ("fields", _fields(event)),
                    (
                        "written by",
                        ", ".join(code(f"domain/{m}.py") for m in writers.get(event.__name__, [])),
                    ),
                ],
            ),
        ]
    parts.append("## The writers\n")
    parts.append(
        table(
            ("module", "what it does"),
            [(code(f"domain/{m}.py"), cell(_module_line(m))) for m in writer_modules],
        )
    )
    return "\n".join(parts)


def pend_classes() -> str:
    """The pend-reason classes, from the type and the field's own description."""
    classes = ", ".join(code(c) for c in ev.PendClass.__args__)  # type: ignore[attr-defined]
    return f"The classes are {classes}.\n"


def failure_reasons() -> str:
    free = ", ".join(code(r) for r in sorted(spec_types.BUDGET_FREE_REASONS))
    reasons = ", ".join(code(r) for r in spec_types.FAILURE_REASONS)
    actions = ", ".join(code(a) for a in spec_types.FAILURE_ACTIONS)
    return (
        f"A failure has one reason: {reasons}. A rule's action is one of {actions}."
        f" The reasons {free} are the cluster's doing: they never spend a budget.\n"
    )
