"""The group spec's value rules, stated in its OpenAPI schema.

The spec parser (`costart.domain.spec`) checks every value and answers 422 naming the
field; the JSON schema msgspec derives from the document types knows only the types. Each
rule JSON Schema can state exactly is added here from the same `limits`, so the document
calls valid what the parser accepts, and invalid what it refuses (schemathesis checks both
ways, ADR 0049). What it cannot state stays the parser's alone, answered 422: rules
between fields (``min_start`` <= ``replicas``, names a rule or ``success`` refers to, a
job's ``tasks`` beside a replica set's ``replicas``, a shape that asks for nothing),
printable text, duration bounds, and whether the group can ever fit the cluster.
"""

from __future__ import annotations

from typing import Any, Final

from costart.domain import limits

NAME: Final = {"type": "string", "pattern": f"^{limits.NAME_PATTERN}$"}
OWNER: Final = {
    "type": "string",
    "maxLength": limits.MAX_OWNER_LENGTH,
    "pattern": f"^{limits.OWNER_PATTERN}$",
}
LABEL: Final = {"type": "string", "pattern": f"^{limits.LABEL_PATTERN}$"}
DURATION: Final = {"type": "string", "pattern": r"^([0-9]+(ns|us|ms|s|m|h))+$"}


def _count(low: int, high: int) -> dict[str, Any]:
    return {"type": "integer", "minimum": low, "maximum": high}


def _names(max_items: int | None = None, unique: bool = False) -> dict[str, Any]:
    rule: dict[str, Any] = {"type": "array", "items": NAME}
    if max_items is not None:
        rule["maxItems"] = max_items
    if unique:
        rule["uniqueItems"] = True
    return rule


_REPLICAS: Final = _count(1, limits.MAX_REPLICAS_PER_MEMBER)
RULES: Final[dict[str, dict[str, dict[str, Any]]]] = {
    "GroupDoc": {
        "name": NAME,
        "owner": OWNER,
        "priority": _count(-limits.MAX_PRIORITY, limits.MAX_PRIORITY),
        "members": {"minItems": 1, "maxItems": limits.MAX_MEMBERS_PER_GROUP},
        "labels": {
            "maxProperties": limits.MAX_LABELS_PER_GROUP,
            "propertyNames": LABEL,
            "additionalProperties": LABEL,
        },
    },
    "MemberDoc": {
        "name": NAME,
        "owner": OWNER,
        "profile": {"type": "string", "maxLength": limits.MAX_PROFILE_LENGTH},
        "tasks": _count(1, limits.MAX_TASKS_PER_MEMBER),
        "replicas": _REPLICAS,
        "min_start": _REPLICAS,
        "min_running": _REPLICAS,
        "topology": NAME,
        "claims": _names(limits.MAX_CLAIMS_PER_MEMBER, unique=True),
        "task_claims": _names(limits.MAX_CLAIMS_PER_MEMBER, unique=True),
    },
    "Shape": {
        "gpu": _count(0, limits.MAX_GPU_PER_TASK),
        "cpu": _count(0, limits.MAX_CPU_PER_TASK),
        "mem_gb": _count(0, limits.MAX_MEM_GB_PER_TASK),
        "gpu_type": {**LABEL, "maxLength": limits.MAX_NAME_LENGTH},
    },
    "Topology": {"level": NAME},
    "PlacementDoc": {
        "timeout": DURATION,
        "backoff": DURATION,
        "backoff_max": DURATION,
        "max_attempts": _count(1, limits.MAX_ATTEMPTS),
        "topology": NAME,
    },
    "BarrierDoc": {"timeout": DURATION},
    "FailureDoc": {
        "max_group_restarts": _count(0, limits.MAX_GROUP_RESTARTS),
        "default_max_restarts": _count(0, limits.MAX_RESTARTS),
        "rules": {"maxItems": limits.MAX_FAILURE_RULES},
    },
    "RuleDoc": {
        "reasons": {"minItems": 1},
        "members": _names(),
        "max_restarts": _count(0, limits.MAX_RESTARTS),
    },
    "SuccessDoc": {"members": _names()},
}
"""Component -> property -> the keywords added to it (to its non-null branch, for an
optional property; to its string branch, for a topology that may be a name)."""


def with_rules(components: dict[str, Any]) -> dict[str, Any]:
    """``components`` (msgspec's JSON schemas of the document types) with `RULES` added."""
    ruled = {name: dict(schema) for name, schema in components.items()}
    for component, properties in RULES.items():
        if component not in ruled:
            continue
        schema = ruled[component]
        declared = dict(schema["properties"])
        for prop, rule in properties.items():
            if prop in declared:
                declared[prop] = _apply(declared[prop], rule)
        schema["properties"] = declared
    return ruled


def _apply(node: dict[str, Any], rule: dict[str, Any]) -> dict[str, Any]:
    """``rule`` added to ``node``, or to the branch of an ``anyOf`` of its type."""
    if "anyOf" not in node:
        return {**node, **rule}
    kind = rule.get("type")
    branches = [
        {**branch, **rule} if kind is not None and branch.get("type") == kind else branch
        for branch in node["anyOf"]
    ]
    return {**node, "anyOf": branches}
