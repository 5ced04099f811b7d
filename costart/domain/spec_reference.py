"""The spec's fields as a reference: every path a spec document may set, its type,
default, unit, limit and description, walked from the document types themselves.

The types (`costart.domain.spec.GroupDoc` and what it holds) give the path, type,
default and whether a field is required; `costart.domain.spec_fields` gives the words
(what it does, its unit and limit). Nothing is written twice: the OpenAPI submit schema
(`costart.rest.openapi`), `costart explain` and the docs' spec reference all read
`spec_fields()`. A dict-valued field's keys are the user's (label keys, env names, claim
names): its path holds ``<key>`` for them, and `find_field` matches any key there.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any, Final

import msgspec
from msgspec import inspect

from costart.domain.errors import SpecError
from costart.domain.spec import GroupDoc, spec_from_object
from costart.domain.spec_fields import DESCRIPTIONS, FieldText

KEY: Final = "<key>"
_NAMED_KEYS: Final = {
    "labels": "<label>",
    "members.run.env": "<NAME>",
    "members.run.env_secrets": "<NAME>",
    "members.run.probes": "<claim>",
}


@dataclass(frozen=True)
class SpecField:
    """One settable field of a spec document."""

    path: str
    type: str
    required: bool
    default: str | None
    """The default as TOML would write it; None when the field is required or its default
    is derived (the description says from what)."""
    text: FieldText

    @property
    def name(self) -> str:
        return self.path.rsplit(".", 1)[-1]


def _type_name(t: inspect.Type) -> str:
    if isinstance(t, inspect.StrType):
        return "string"
    if isinstance(t, inspect.IntType):
        return "integer"
    if isinstance(t, inspect.BoolType):
        return "boolean"
    if isinstance(t, inspect.LiteralType):
        return "one of " + ", ".join(f'"{v}"' for v in t.values)
    if isinstance(t, inspect.ListType):
        return f"list of {_type_name(t.item_type)}"
    if isinstance(t, inspect.DictType):
        return f"table of {_type_name(t.value_type)}"
    if isinstance(t, inspect.StructType):
        return "table"
    if isinstance(t, inspect.UnionType):
        names = [_type_name(m) for m in t.types if not isinstance(m, inspect.NoneType)]
        return " or ".join(names)
    if isinstance(t, inspect.Metadata):
        return _type_name(t.type)
    return type(t).__name__


def _default(field: inspect.Field) -> str | None:
    if field.required:
        return None
    if field.default_factory is not msgspec.NODEFAULT:
        value = field.default_factory()
    else:
        value = field.default
    if value is None or isinstance(value, msgspec.Struct):
        return None
    return msgspec.json.encode(value).decode()


def _children(t: inspect.Type) -> tuple[inspect.StructType | None, bool]:
    """The struct a field's type holds (itself, a list's item, a dict's value, a union's
    member) and whether the step into it passes a user's key."""
    if isinstance(t, inspect.StructType):
        return t, False
    if isinstance(t, inspect.ListType):
        return _children(t.item_type)
    if isinstance(t, inspect.DictType):
        inner, _ = _children(t.value_type)
        return inner, True
    if isinstance(t, inspect.UnionType):
        for member in t.types:
            inner, keyed = _children(member)
            if inner is not None:
                return inner, keyed
    return None, False


def _walk(
    struct: inspect.StructType, prefix: str, named_keys: Mapping[str, str]
) -> list[tuple[str, inspect.Field]]:
    found = []
    for field in struct.fields:
        path = f"{prefix}{field.encode_name}"
        found.append((path, field))
        inner, keyed = _children(field.type)
        if inner is not None:
            step = f"{path}.{named_keys.get(path, KEY)}." if keyed else f"{path}."
            found += _walk(inner, step, named_keys)
    return found


def document_fields(
    doc_type: type, named_keys: Mapping[str, str] | None = None
) -> list[tuple[str, str, bool, str | None]]:
    """Every field a document type defines, in document order: its path (a dict's keys
    as ``named_keys`` names them for that dict's path, else ``<key>``), type in words,
    whether it is required and its default as JSON (None: required, or a table, or
    derived). Any strict msgspec document type: the spec's, the cluster file's."""
    root = inspect.type_info(doc_type)
    assert isinstance(root, inspect.StructType)
    return [
        (path, _type_name(field.type), field.required, _default(field))
        for path, field in _walk(root, "", named_keys or {})
    ]


def field_paths() -> list[str]:
    """Every path the spec's document types define, in document order."""
    return [path for path, *_ in document_fields(GroupDoc, _NAMED_KEYS)]


@cache
def spec_fields() -> tuple[SpecField, ...]:
    """Every field with its words. Raises `KeyError` naming a path the types define
    and `costart.domain.spec_fields` does not describe (a test keeps them equal)."""
    fields = []
    for path, type_name, required, default in document_fields(GroupDoc, _NAMED_KEYS):
        if path not in DESCRIPTIONS:
            raise KeyError(f"spec field {path} has no description in costart.domain.spec_fields")
        words = DESCRIPTIONS[path]
        shown = default if default is not None or not words.resolved else words.resolved
        fields.append(SpecField(path, type_name, required, shown, words))
    return tuple(fields)


def _steps(path: str) -> list[str]:
    return [s for s in path.replace("[", ".").replace("]", "").split(".") if s and not s.isdigit()]


def find_field(path: str) -> SpecField | None:
    """The field ``path`` names: list indexes are ignored (``members[0].name`` is
    ``members.name``) and any key matches a ``<key>`` step."""
    wanted = _steps(path)
    for field in spec_fields():
        steps = field.path.split(".")
        if len(steps) == len(wanted) and all(
            s == w or (s.startswith("<") and s.endswith(">"))
            for s, w in zip(steps, wanted, strict=True)
        ):
            return field
    return None


def near_fields(path: str, limit: int = 4) -> list[str]:
    """Paths that look like ``path``: those with the same last name first, then the
    closest spellings."""
    leaf = _steps(path)[-1] if _steps(path) else ""
    paths = [f.path for f in spec_fields()]
    same_leaf = [p for p in paths if p.rsplit(".", 1)[-1] == leaf]
    close = difflib.get_close_matches(path, paths, n=limit, cutoff=0.5)
    return list(dict.fromkeys([*same_leaf, *close]))[:limit]


def describe_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """Put each field's description into a JSON schema of `GroupDoc` whose references
    are inlined (the submit body's), in place; returns it. A property the reference does
    not know raises `KeyError`: the schema and the reference read the same types."""
    by_path = {f.path: f for f in spec_fields()}

    def visit(node: Any, prefix: str) -> None:
        if not isinstance(node, dict):
            return
        for alternative in node.get("anyOf", ()):
            visit(alternative, prefix)
        visit(node.get("items"), prefix)
        visit(node.get("additionalProperties"), prefix + _key_step(prefix))
        for name, prop in node.get("properties", {}).items():
            path = f"{prefix}{name}"
            prop["description"] = reference_line(by_path[path])
            visit(prop, path + ".")

    visit(schema, "")
    return schema


def _key_step(prefix: str) -> str:
    return f"{_NAMED_KEYS.get(prefix.rstrip('.'), KEY)}."


def reference_line(field: SpecField) -> str:
    """The field's description, unit and limit in one paragraph (OpenAPI, tables)."""
    parts = [field.text.what]
    if field.text.unit:
        parts.append(f"Unit: {field.text.unit}.")
    if field.text.limit:
        parts.append(f"Limit: {field.text.limit}.")
    return " ".join(parts)


# A valid document with every optional part present, so any one field can be set to a
# bad value and the parser's own refusal shown (`refusal`).
_BASE: Final[dict[str, Any]] = {
    "name": "ref-group",
    "owner": "alice",
    "placement": {"topology": {"level": "block"}},
    "failure": {"rules": [{"action": "restart-member", "max_restarts": 1}]},
    "members": [
        {
            "name": "trainer",
            "kind": "job",
            "shape": {"gpu": 1},
            "topology": {"level": "rack"},
            "claims": ["weights"],
            "task_claims": ["device"],
            "run": {"argv": ["python3", "trainer.py"], "probes": {"weights": {"file": "w.bin"}}},
        },
        {"name": "rollout", "kind": "replica-set", "shape": {"gpu": 1}, "replicas": 2},
    ],
}
_REPLICA_FIELDS: Final = frozenset({"replicas", "min_start", "min_running"})
_PROBE_KINDS: Final = frozenset({"exec", "http", "tcp", "file"})


def _with_value(path: str, value: Any) -> Any:
    """`_BASE` with the field at ``path`` set to ``value`` (a copy)."""
    doc = msgspec.json.decode(msgspec.json.encode(_BASE))
    steps = path.split(".")
    node = doc
    for i, step in enumerate(steps[:-1]):
        nxt = node.setdefault(step, {}) if not step.startswith("<") else node["weights"]
        if isinstance(nxt, list):
            nxt = nxt[1 if steps[-1] in _REPLICA_FIELDS and step == "members" else 0]
        node = nxt
        if steps[i + 1 :] and steps[-1] in _PROBE_KINDS and steps[i + 1] == steps[-1]:
            node.clear()  # a probe is exactly one kind: the bad one alone
    node[steps[-1]] = value
    return doc


def refusal(field: SpecField) -> tuple[Any, str] | None:
    """The field's example bad value and the error the parser gives it (None: the field
    shows none). Raises `AssertionError` if the parser accepts the value: the example
    would be a lie."""
    if not field.text.bad:
        return None
    (value,) = field.text.bad
    try:
        spec_from_object(_with_value(field.path, value))
    except SpecError as error:
        return value, str(error)
    raise AssertionError(f"{field.path} = {value!r} is accepted; it is no bad example")
