"""Parse and validate a group spec (docs/design.md §3.1) from TOML or JSON.

Two steps: msgspec decodes the document into strict document types (unknown fields and
wrong types are rejected with the field path), then `normalize` checks values and
cross-field rules and produces the frozen `GroupSpec`. Every failure is one `SpecError`
naming the field path and the reason.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Literal

import msgspec

from costart.domain import limits
from costart.domain.durations import parse_duration_ns
from costart.domain.errors import SpecError
from costart.domain.labels import check_labels
from costart.domain.run_table import RunDoc, check_probe_ports, run_spec
from costart.domain.spec_advice import spec_warnings
from costart.domain.spec_document import decode_document, spec_bytes
from costart.domain.spec_keys import name_keys
from costart.domain.spec_types import (
    DEFAULT_MAX_GROUP_RESTARTS,
    DEFAULT_MAX_RESTARTS,
    FAILURE_ACTIONS,
    MEMBER_KINDS,
    NO_ATTEMPT_LIMIT,
    PLACEMENT_MODES,
    RULE_REASONS,
    SUCCESS_WHENS,
    TOPOLOGY_POLICIES,
    BarrierPolicy,
    FailureAction,
    FailurePolicy,
    FailureRule,
    GroupSpec,
    MemberKind,
    MemberSpec,
    PlacementMode,
    PlacementPolicy,
    RuleReason,
    Shape,
    SuccessPolicy,
    SuccessWhen,
    Topology,
)

SpecFormat = Literal["toml", "json"]
_NAME = re.compile(limits.NAME_PATTERN)
_OWNER = re.compile(limits.OWNER_PATTERN)
_LABEL = re.compile(limits.LABEL_PATTERN)


def is_name(text: str) -> bool:
    """Whether ``text`` is a valid group, member or claim name (matched whole)."""
    return _NAME.fullmatch(text) is not None


class _Doc(msgspec.Struct, forbid_unknown_fields=True):
    """Base of the document types: unknown fields are errors."""


class PlacementDoc(_Doc):
    """``max_attempts``: how many placement attempts (a reservation or barrier timeout,
    a failed claim before the start each end one) the group gets, at least 1; left out,
    no limit (ADR 0071)."""

    mode: PlacementMode = "reserve"
    timeout: str = "15m"
    backoff: str = "1m"
    backoff_max: str = "30m"
    max_attempts: int | None = None
    topology: Topology | str | None = None


class BarrierDoc(_Doc):
    timeout: str = "10m"


class RuleDoc(_Doc):
    """``max_restarts``: how many times a restart-member rule restarts each member it
    covers (``0``: none, the first failure it catches fails the group); left out,
    `DEFAULT_MAX_RESTARTS` (ADR 0071)."""

    action: FailureAction
    reasons: list[RuleReason] = msgspec.field(default_factory=lambda: ["any"])
    members: list[str] = msgspec.field(default_factory=list)
    max_restarts: int | None = None


class FailureDoc(_Doc):
    """``max_group_restarts``: how many times restart-group restarts the whole group
    (``0``: none); left out, `DEFAULT_MAX_GROUP_RESTARTS` when the default action or a
    rule restarts the group, else 0 (ADR 0071). ``default_max_restarts``: how many times
    a ``default`` of restart-member restarts each member (``0``: none); left out,
    `DEFAULT_MAX_RESTARTS`."""

    default: FailureAction = "fail-group"
    max_group_restarts: int | None = None
    default_max_restarts: int | None = None
    rules: list[RuleDoc] = msgspec.field(default_factory=list)


class SuccessDoc(_Doc):
    when: SuccessWhen = "all-jobs"
    members: list[str] = msgspec.field(default_factory=list)


class MemberDoc(_Doc):
    name: str
    kind: MemberKind
    shape: Shape
    owner: str | None = None
    profile: str = ""
    tasks: int | None = None
    replicas: int | None = None
    min_start: int | None = None
    min_running: int | None = None
    topology: Topology | str | None = None
    claims: list[str] = msgspec.field(default_factory=list)
    task_claims: list[str] = msgspec.field(default_factory=list)
    max_runtime: str | None = None
    preemptible: bool = False
    run: RunDoc | None = None


class GroupDoc(_Doc):
    name: str
    owner: str
    members: list[MemberDoc]
    priority: int = 0
    placement: PlacementDoc = msgspec.field(default_factory=PlacementDoc)
    barrier: BarrierDoc = msgspec.field(default_factory=BarrierDoc)
    failure: FailureDoc = msgspec.field(default_factory=FailureDoc)
    success: SuccessDoc = msgspec.field(default_factory=SuccessDoc)
    labels: dict[str, str] = msgspec.field(default_factory=dict)


_ALLOWED_BY_FIELD: dict[str, Sequence[str]] = {
    "mode": PLACEMENT_MODES,
    "policy": TOPOLOGY_POLICIES,
    "kind": MEMBER_KINDS,
    "action": FAILURE_ACTIONS,
    "default": FAILURE_ACTIONS,
    "reasons": RULE_REASONS,
    "when": SUCCESS_WHENS,
}
_AT = re.compile(r"^(?P<reason>.*) - at `\$(?P<path>[^`]*)`$", re.DOTALL)
_UNKNOWN = re.compile(r"^Object contains unknown field `(?P<field>[^`]*)`$")
_MISSING = re.compile(r"^Object missing required field `(?P<field>[^`]*)`$")
_ENUM = re.compile(r"^Invalid enum value (?P<value>.*)$")


def _join(path: str, field: str) -> str:
    return f"{path}.{field}" if path else field


def _spec_error_from_msgspec(error: msgspec.MsgspecError) -> SpecError:
    """Turn msgspec's message ("... - at `$.members[0].kind`") into path + reason."""
    text = str(error)
    match = _AT.match(text)
    path, reason = (match["path"].lstrip("."), match["reason"]) if match else ("", text)
    if unknown := _UNKNOWN.match(reason):
        return SpecError(_join(path, unknown["field"]), "unknown field")
    if missing := _MISSING.match(reason):
        return SpecError(_join(path, missing["field"]), "missing required field")
    if enum := _ENUM.match(reason):
        field = re.sub(r"\[\d+\]$", "", path).rsplit(".", 1)[-1]
        allowed = _ALLOWED_BY_FIELD.get(field)
        expected = f" (expected one of: {', '.join(allowed)})" if allowed else ""
        return SpecError(path, f"unknown value {enum['value']}{expected}")
    return SpecError(path, reason)


def parse_spec(data: bytes | str, fmt: SpecFormat) -> GroupSpec:
    """Decode and validate a spec document. Raises `SpecError` naming the field (an
    empty path when the bytes are no document at all: `costart.domain.spec_document`)."""
    return normalize(_document(data, fmt))


def parse_spec_warned(data: bytes | str, fmt: SpecFormat) -> tuple[GroupSpec, list[str]]:
    """`parse_spec`, and what the valid spec may still get wrong: budgets left to their
    defaults (`defaulted_budgets`) and `spec_warnings`. What `costart validate`, `submit`
    and REST's ``Warning: 299`` headers say."""
    doc = _document(data, fmt)
    spec = normalize(doc)
    return spec, [*defaulted_budgets(doc), *spec_warnings(spec)]


def _document(data: bytes | str, fmt: SpecFormat) -> GroupDoc:
    raw = spec_bytes(data)
    try:
        doc: GroupDoc = decode_document(raw, fmt, GroupDoc)
    except msgspec.ValidationError as error:
        raise _named(_spec_error_from_msgspec(error), raw, fmt) from None
    return doc


def _named(error: SpecError, raw: bytes, fmt: SpecFormat) -> SpecError:
    """``error`` (the typed decode's) with the dict keys in its path named, from the
    document decoded plain. The typed decode stops at the first wrong field, so the plain
    one may meet broken syntax further on: that `SpecError` is raised instead (the bytes
    are no document; the shape does not matter yet). A value both decodes refuse (a
    number out of range) leaves no plain document: ``error`` stays as msgspec put it."""
    try:
        plain = decode_document(raw, fmt)
    except msgspec.ValidationError:
        return error
    return name_keys(error, plain, _refusal)


def spec_from_object(obj: Any) -> GroupSpec:
    """Validate an already-decoded document (a dict, as from a REST body)."""
    try:
        doc = msgspec.convert(obj, type=GroupDoc)
    except msgspec.ValidationError as error:
        raise name_keys(_spec_error_from_msgspec(error), obj, _refusal) from None
    return normalize(doc)


def _refusal(obj: Any) -> SpecError | None:
    """How the document's shape is refused (None: it is not), for `name_keys`."""
    try:
        msgspec.convert(obj, type=GroupDoc)
    except msgspec.ValidationError as error:
        return _spec_error_from_msgspec(error)
    return None


def normalize(doc: GroupDoc) -> GroupSpec:
    """Check values and cross-field rules; fill defaults; return the frozen spec."""
    _check_name("name", doc.name)
    _check_owner("owner", doc.owner)
    _check_range("priority", doc.priority, -limits.MAX_PRIORITY, limits.MAX_PRIORITY)
    if not doc.members:
        raise SpecError("members", "a group needs at least one member")
    if len(doc.members) > limits.MAX_MEMBERS_PER_GROUP:
        raise SpecError(
            "members",
            f"{len(doc.members)} members; the limit is {limits.MAX_MEMBERS_PER_GROUP}",
        )
    members = tuple(_member(f"members[{i}]", m, doc.owner) for i, m in enumerate(doc.members))
    seen: dict[str, int] = {}
    for i, member in enumerate(members):
        if member.name in seen:
            raise SpecError(
                f"members[{i}].name",
                f"duplicate member name {member.name!r} (also members[{seen[member.name]}])",
            )
        seen[member.name] = i
    check_probe_ports([(f"members[{i}].run", m.run, m.count) for i, m in enumerate(members)])
    names = tuple(m.name for m in members)
    return GroupSpec(
        name=doc.name,
        owner=doc.owner,
        priority=doc.priority,
        placement=_placement(doc.placement),
        barrier=BarrierPolicy(timeout_ns=_timeout("barrier.timeout", doc.barrier.timeout)),
        failure=_failure(doc.failure, names),
        success=_success(doc.success, members),
        members=members,
        labels=check_labels("labels", doc.labels),
    )


def _check_name(path: str, name: str) -> None:
    if not is_name(name):
        raise SpecError(
            path,
            f"bad name {name!r}: use 1-{limits.MAX_NAME_LENGTH} of a-z, 0-9 and '-', "
            "starting and ending with a letter or digit",
        )


def _check_owner(path: str, owner: str) -> None:
    if len(owner) > limits.MAX_OWNER_LENGTH or not _OWNER.fullmatch(owner):
        raise SpecError(
            path,
            f"bad owner {owner!r}: 1-{limits.MAX_OWNER_LENGTH} characters of letters, "
            "digits and . _ @ -",
        )


def _check_range(path: str, value: int, low: int, high: int) -> None:
    if not low <= value <= high:
        raise SpecError(path, f"must be between {low} and {high} (got {value})")


def _check_count(path: str, value: int, high: int) -> None:
    if value <= 0:
        raise SpecError(path, f"must be a positive count (got {value})")
    if value > high:
        raise SpecError(path, f"{value} exceeds the limit of {high}")


def _duration(path: str, text: str) -> int:
    try:
        ns = parse_duration_ns(text)
    except ValueError as error:
        raise SpecError(path, str(error)) from None
    if ns > limits.MAX_DURATION_NS:
        raise SpecError(path, f"{text!r} exceeds the limit of 30 days")
    return ns


def _timeout(path: str, text: str) -> int:
    """A deadline: a duration longer than 0s (a zero timeout would fire at once)."""
    ns = _duration(path, text)
    if ns <= 0:
        raise SpecError(path, f"{text!r}: a timeout must be longer than 0s")
    return ns


def _topology(path: str, value: Topology | str | None) -> tuple[Topology | None, str | None]:
    """A topology is inline or the name of a placement group."""
    if value is None:
        return None, None
    if isinstance(value, str):
        _check_name(path, value)
        return None, value
    _check_name(f"{path}.level", value.level)
    return value, None


def _placement(doc: PlacementDoc) -> PlacementPolicy:
    backoff_ns = _duration("placement.backoff", doc.backoff)
    backoff_max_ns = _duration("placement.backoff_max", doc.backoff_max)
    if backoff_max_ns < backoff_ns:
        raise SpecError(
            "placement.backoff_max",
            f"{doc.backoff_max!r} is shorter than placement.backoff {doc.backoff!r}",
        )
    timeout_ns = _timeout("placement.timeout", doc.timeout)
    if doc.max_attempts == 0:
        raise SpecError(
            "placement.max_attempts",
            "0 would allow no attempt: leave max_attempts out for no limit (ADR 0071)",
        )
    if doc.max_attempts is not None:
        _check_range("placement.max_attempts", doc.max_attempts, 1, limits.MAX_ATTEMPTS)
    topology, placement_group = _topology("placement.topology", doc.topology)
    return PlacementPolicy(
        mode=doc.mode,
        timeout_ns=timeout_ns,
        backoff_ns=backoff_ns,
        backoff_max_ns=backoff_max_ns,
        max_attempts=doc.max_attempts or NO_ATTEMPT_LIMIT,
        topology=topology,
        placement_group=placement_group,
    )


def _shape(path: str, shape: Shape) -> Shape:
    _check_range(f"{path}.gpu", shape.gpu, 0, limits.MAX_GPU_PER_TASK)
    _check_range(f"{path}.cpu", shape.cpu, 0, limits.MAX_CPU_PER_TASK)
    _check_range(f"{path}.mem_gb", shape.mem_gb, 0, limits.MAX_MEM_GB_PER_TASK)
    if shape.gpu == shape.cpu == shape.mem_gb == 0:
        raise SpecError(path, "requests no resources: set gpu, cpu or mem_gb")
    if shape.gpu_type is not None:
        if shape.gpu == 0:
            raise SpecError(f"{path}.gpu_type", "set without any gpu in the shape")
        gpu_type = shape.gpu_type
        if len(gpu_type) > limits.MAX_NAME_LENGTH or not _LABEL.fullmatch(gpu_type):
            raise SpecError(
                f"{path}.gpu_type",
                f"bad gpu type {gpu_type!r}: letters, digits and . _ / -, "
                "starting and ending with a letter or digit",
            )
    return shape


def _member(path: str, doc: MemberDoc, group_owner: str) -> MemberSpec:
    _check_name(f"{path}.name", doc.name)
    owner = doc.owner if doc.owner is not None else group_owner
    _check_owner(f"{path}.owner", owner)
    if len(doc.profile) > limits.MAX_PROFILE_LENGTH:
        raise SpecError(f"{path}.profile", f"longer than {limits.MAX_PROFILE_LENGTH} characters")
    if not doc.profile.isprintable():
        raise SpecError(f"{path}.profile", f"control character in {doc.profile!r}")
    count, min_start, min_running = (
        _job_counts(path, doc) if doc.kind == "job" else _replica_counts(path, doc)
    )
    _check_claims(f"{path}.claims", doc.claims)
    _check_claims(f"{path}.task_claims", doc.task_claims)
    for i, claim in enumerate(doc.task_claims):
        if claim in doc.claims:
            raise SpecError(f"{path}.task_claims[{i}]", f"{claim!r} is a member claim already")
    topology, placement_group = _topology(f"{path}.topology", doc.topology)
    max_runtime_ns = None
    if doc.max_runtime is not None:
        max_runtime_ns = _duration(f"{path}.max_runtime", doc.max_runtime)
        if max_runtime_ns <= 0:
            raise SpecError(
                f"{path}.max_runtime",
                f"{doc.max_runtime!r}: a run-time limit must be longer than 0s",
            )
    run = None
    if doc.run is not None:
        run = run_spec(f"{path}.run", doc.run, (*doc.claims, *doc.task_claims), count)
        if run.slurm is not None and max_runtime_ns is not None:
            # Slurm's limit is costart's own plus the stop's grace: ours fires first.
            limit = max_runtime_ns + run.grace_ns
            run = msgspec.structs.replace(
                run, slurm=msgspec.structs.replace(run.slurm, time_limit_ns=limit)
            )
    return MemberSpec(
        name=doc.name,
        kind=doc.kind,
        owner=owner,
        profile=doc.profile,
        count=count,
        min_start=min_start,
        min_running=min_running,
        shape=_shape(f"{path}.shape", doc.shape),
        topology=topology,
        placement_group=placement_group,
        claims=tuple(doc.claims),
        task_claims=tuple(doc.task_claims),
        max_runtime_ns=max_runtime_ns,
        preemptible=doc.preemptible,
        run=run,
    )


def _check_claims(path: str, claims: list[str]) -> None:
    if len(claims) > limits.MAX_CLAIMS_PER_MEMBER:
        raise SpecError(path, f"more than {limits.MAX_CLAIMS_PER_MEMBER} claims")
    for i, claim in enumerate(claims):
        _check_name(f"{path}[{i}]", claim)
        if claim in claims[:i]:
            raise SpecError(f"{path}[{i}]", f"duplicate claim {claim!r}")


def _job_counts(path: str, doc: MemberDoc) -> tuple[int, int, int]:
    for field in ("replicas", "min_start", "min_running"):
        if getattr(doc, field) is not None:
            raise SpecError(f"{path}.{field}", "only a replica-set has this field (use tasks)")
    tasks = 1 if doc.tasks is None else doc.tasks
    _check_count(f"{path}.tasks", tasks, limits.MAX_TASKS_PER_MEMBER)
    return tasks, tasks, tasks


def _replica_counts(path: str, doc: MemberDoc) -> tuple[int, int, int]:
    if doc.tasks is not None:
        raise SpecError(f"{path}.tasks", "only a job has tasks (use replicas)")
    replicas = 1 if doc.replicas is None else doc.replicas
    _check_count(f"{path}.replicas", replicas, limits.MAX_REPLICAS_PER_MEMBER)
    min_start = replicas if doc.min_start is None else doc.min_start
    _check_count(f"{path}.min_start", min_start, limits.MAX_REPLICAS_PER_MEMBER)
    if min_start > replicas:
        raise SpecError(f"{path}.min_start", f"{min_start} is more than replicas ({replicas})")
    min_running = min_start if doc.min_running is None else doc.min_running
    _check_count(f"{path}.min_running", min_running, limits.MAX_REPLICAS_PER_MEMBER)
    if min_running > min_start:
        raise SpecError(
            f"{path}.min_running", f"{min_running} is more than min_start ({min_start})"
        )
    return replicas, min_start, min_running


def _check_member_names(path: str, names: Sequence[str], known: Sequence[str]) -> None:
    for i, name in enumerate(names):
        if name not in known:
            raise SpecError(
                f"{path}[{i}]", f"unknown member {name!r} (members: {', '.join(known)})"
            )


def _failure(doc: FailureDoc, names: tuple[str, ...]) -> FailurePolicy:
    """The failure policy with every budget resolved: what the log records (ADR 0071)."""
    max_group_restarts = doc.max_group_restarts
    if max_group_restarts is None:
        restarts_group = "restart-group" in (doc.default, *(r.action for r in doc.rules))
        max_group_restarts = DEFAULT_MAX_GROUP_RESTARTS if restarts_group else 0
    _check_range("failure.max_group_restarts", max_group_restarts, 0, limits.MAX_GROUP_RESTARTS)
    if len(doc.rules) > limits.MAX_FAILURE_RULES:
        raise SpecError("failure.rules", f"more than {limits.MAX_FAILURE_RULES} rules")
    rules = []
    for i, rule in enumerate(doc.rules):
        path = f"failure.rules[{i}]"
        _check_member_names(f"{path}.members", rule.members, names)
        if not rule.reasons:
            raise SpecError(f"{path}.reasons", "empty: list reasons or use ['any']")
        max_restarts = rule.max_restarts
        if max_restarts is None:
            max_restarts = DEFAULT_MAX_RESTARTS if rule.action == "restart-member" else 0
        _check_range(f"{path}.max_restarts", max_restarts, 0, limits.MAX_RESTARTS)
        rules.append(
            FailureRule(
                members=tuple(rule.members),
                reasons=tuple(rule.reasons),
                action=rule.action,
                max_restarts=max_restarts,
            )
        )
    default_max_restarts = doc.default_max_restarts
    if default_max_restarts is None:
        default_max_restarts = DEFAULT_MAX_RESTARTS if doc.default == "restart-member" else 0
    _check_range("failure.default_max_restarts", default_max_restarts, 0, limits.MAX_RESTARTS)
    return FailurePolicy(
        default=doc.default,
        max_group_restarts=max_group_restarts,
        rules=tuple(rules),
        default_max_restarts=default_max_restarts,
    )


def defaulted_budgets(doc: GroupDoc) -> list[str]:
    """A warning per restart budget the document leaves to its default (ADR 0071): the
    spec is valid, but the author may not know how many restarts it gets."""
    found = []
    for i, rule in enumerate(doc.failure.rules):
        if rule.action == "restart-member" and rule.max_restarts is None:
            found.append(
                f"failure.rules[{i}].max_restarts: not set: restart-member restarts each "
                f"member it covers {DEFAULT_MAX_RESTARTS} times (the default), then fails "
                "the group; set max_restarts to say how many (0: none)"
            )
    if doc.failure.default == "restart-member" and doc.failure.default_max_restarts is None:
        found.append(
            "failure.default_max_restarts: not set: the default action restart-member "
            f"restarts each member {DEFAULT_MAX_RESTARTS} times (the default), then fails "
            "the group; set default_max_restarts to say how many (0: none)"
        )
    actions = (doc.failure.default, *(r.action for r in doc.failure.rules))
    if "restart-group" in actions and doc.failure.max_group_restarts is None:
        found.append(
            "failure.max_group_restarts: not set: restart-group restarts the group "
            f"{DEFAULT_MAX_GROUP_RESTARTS} times (the default), then fails it; set "
            "max_group_restarts to say how many (0: none)"
        )
    return found


def _success(doc: SuccessDoc, members: tuple[MemberSpec, ...]) -> SuccessPolicy:
    if doc.when != "members":
        if doc.members:
            raise SpecError(
                "success.members", f"only used with when = 'members' (when is {doc.when!r})"
            )
        return SuccessPolicy(when=doc.when)
    if not doc.members:
        raise SpecError("success.members", "when = 'members' needs at least one member name")
    jobs = tuple(m.name for m in members if m.kind == "job")
    _check_member_names("success.members", doc.members, [m.name for m in members])
    for i, name in enumerate(doc.members):
        if name not in jobs:
            raise SpecError(
                f"success.members[{i}]", f"{name!r} is a replica-set; only jobs succeed"
            )
    return SuccessPolicy(when="members", members=tuple(doc.members))
