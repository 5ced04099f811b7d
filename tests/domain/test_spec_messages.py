"""Every refusal of a spec, exactly as its user reads it (field path and reason), and
every limit accepted at the limit itself: one table row per check in `domain/spec.py`.

The looser table in `test_spec.py` proves that nothing is written; this one pins the
words, so a message that loses its field, its value or its allowed values fails here.
"""

from __future__ import annotations

import re

import pytest

from costart.domain import limits as lim
from costart.domain.errors import SpecError
from costart.domain.spec import parse_spec, spec_from_object
from costart.domain.spec_types import PLACEMENT_MODES, RULE_REASONS
from tests.domain.test_spec import base, with_

RULE_NAME = "starting and ending with a letter or digit"
NAME = f"use 1-{lim.MAX_NAME_LENGTH} of a-z, 0-9 and '-', {RULE_NAME}"
ACTIONS = "fail-group, restart-member, restart-group, tolerate"
MODES = ", ".join(PLACEMENT_MODES)  # the modes there are (atomic, reserve, ...)
REASONS = ", ".join(RULE_REASONS)  # error, oom, node-lost, ... any
DAY_30 = f"{30 * 24}h"


def plain_id(index: int, path: str) -> str:
    """A test id of letters, digits and '-' only: mutmut passes ids on its own command
    line, where quotes, slashes and backslashes in a parameter id do not match."""
    return f"{index:02d}-" + re.sub(r"[^a-z0-9]+", "-", path.lower()).strip("-")


def job(**fields: object) -> dict:
    return {"name": "trainer", "kind": "job", "shape": {"gpu": 8}} | fields


def replicas(**fields: object) -> dict:
    return {"name": "rollout", "kind": "replica-set", "shape": {"gpu": 1}} | fields


def rule(**fields: object) -> dict:
    return {"action": "tolerate"} | fields


REFUSED = [
    # msgspec's own findings, translated.
    (with_("colour", "red"), "colour", "unknown field"),
    (with_("members.0.shape.tpu", 4), "members[0].shape.tpu", "unknown field"),
    ({"owner": "alice", "members": []}, "name", "missing required field"),
    (
        with_("members.0", {"name": "t", "kind": "job"}),
        "members[0].shape",
        "missing required field",
    ),
    (with_("priority", "high"), "priority", "Expected `int`, got `str`"),
    (
        with_("members.0.kind", "daemon"),
        "members[0].kind",
        "unknown value 'daemon' (expected one of: job, replica-set)",
    ),
    (
        with_("placement.mode", "now"),
        "placement.mode",
        f"unknown value 'now' (expected one of: {MODES})",
    ),
    (
        with_("members.0.topology", {"level": "rack", "policy": "scatter"}),
        "members[0].topology.policy",
        "unknown value 'scatter' (expected one of: pack, spread)",
    ),
    (
        with_("failure.default", "retry"),
        "failure.default",
        f"unknown value 'retry' (expected one of: {ACTIONS})",
    ),
    (
        with_("failure.rules", [{"action": "explode"}]),
        "failure.rules[0].action",
        f"unknown value 'explode' (expected one of: {ACTIONS})",
    ),
    (
        with_("failure.rules", [rule(reasons=["any", "cosmic"])]),
        "failure.rules[0].reasons[1]",
        f"unknown value 'cosmic' (expected one of: {REASONS})",
    ),
    (
        with_("success", {"when": "never"}),
        "success.when",
        "unknown value 'never' (expected one of: all-jobs, any-job, members)",
    ),
    # The group.
    (with_("name", "Bad_Name"), "name", f"bad name 'Bad_Name': {NAME}"),
    (with_("name", "x" * 64), "name", f"bad name '{'x' * 64}': {NAME}"),
    (
        with_("owner", "al ice"),
        "owner",
        f"bad owner 'al ice': 1-{lim.MAX_OWNER_LENGTH} characters of letters, digits and . _ @ -",
    ),
    (
        with_("owner", "a" * 64),
        "owner",
        f"bad owner '{'a' * 64}': 1-{lim.MAX_OWNER_LENGTH} characters of letters, digits "
        "and . _ @ -",
    ),
    (
        with_("priority", lim.MAX_PRIORITY + 1),
        "priority",
        f"must be between {-lim.MAX_PRIORITY} and {lim.MAX_PRIORITY} (got {lim.MAX_PRIORITY + 1})",
    ),
    (
        with_("priority", -lim.MAX_PRIORITY - 1),
        "priority",
        f"must be between {-lim.MAX_PRIORITY} and {lim.MAX_PRIORITY} (got {-lim.MAX_PRIORITY - 1})",
    ),
    (with_("members", []), "members", "a group needs at least one member"),
    (
        with_("members", [job(name=f"m{i}") for i in range(lim.MAX_MEMBERS_PER_GROUP + 1)]),
        "members",
        f"{lim.MAX_MEMBERS_PER_GROUP + 1} members; the limit is {lim.MAX_MEMBERS_PER_GROUP}",
    ),
    (
        with_("members", [job(), replicas(), job(name="rollout")]),
        "members[2].name",
        "duplicate member name 'rollout' (also members[1])",
    ),
    # Placement and barrier.
    (
        with_("placement.timeout", "15 minutes"),
        "placement.timeout",
        "bad duration '15 minutes': expected an integer with a unit (ns, us, ms, s, m, h), "
        "e.g. '90s' or '1h30m'",
    ),
    (
        with_("placement.timeout", "721h"),
        "placement.timeout",
        "'721h' exceeds the limit of 30 days",
    ),
    (
        with_("placement.timeout", "0s"),
        "placement.timeout",
        "'0s': a timeout must be longer than 0s",
    ),
    (with_("barrier.timeout", "0ms"), "barrier.timeout", "'0ms': a timeout must be longer than 0s"),
    (
        with_("placement.backoff", "1 m"),
        "placement.backoff",
        "bad duration '1 m': expected an integer with a unit (ns, us, ms, s, m, h), "
        "e.g. '90s' or '1h30m'",
    ),
    (
        with_("placement.backoff", "1h"),
        "placement.backoff_max",
        "'30m' is shorter than placement.backoff '1h'",
    ),
    (
        with_("placement.backoff_max", "721h"),
        "placement.backoff_max",
        "'721h' exceeds the limit of 30 days",
    ),
    (
        with_("placement.max_attempts", -1),
        "placement.max_attempts",
        f"must be between 1 and {lim.MAX_ATTEMPTS} (got -1)",
    ),
    (
        with_("placement.max_attempts", 0),
        "placement.max_attempts",
        "0 would allow no attempt: leave max_attempts out for no limit (ADR 0071)",
    ),
    (
        with_("placement.max_attempts", lim.MAX_ATTEMPTS + 1),
        "placement.max_attempts",
        f"must be between 1 and {lim.MAX_ATTEMPTS} (got {lim.MAX_ATTEMPTS + 1})",
    ),
    (with_("placement.topology", "Pool"), "placement.topology", f"bad name 'Pool': {NAME}"),
    (
        with_("placement.topology", {"level": "Rack", "policy": "pack"}),
        "placement.topology.level",
        f"bad name 'Rack': {NAME}",
    ),
    # A member.
    (with_("members.0.name", "T"), "members[0].name", f"bad name 'T': {NAME}"),
    (
        with_("members.0.owner", "-bob"),
        "members[0].owner",
        f"bad owner '-bob': 1-{lim.MAX_OWNER_LENGTH} characters of letters, digits and . _ @ -",
    ),
    (
        with_("members.0.profile", "p" * (lim.MAX_PROFILE_LENGTH + 1)),
        "members[0].profile",
        f"longer than {lim.MAX_PROFILE_LENGTH} characters",
    ),
    (
        with_("members.0.profile", "a\tb"),
        "members[0].profile",
        "control character in 'a\\tb'",
    ),
    (with_("members.0.tasks", 0), "members[0].tasks", "must be a positive count (got 0)"),
    (
        with_("members.0.tasks", lim.MAX_TASKS_PER_MEMBER + 1),
        "members[0].tasks",
        f"{lim.MAX_TASKS_PER_MEMBER + 1} exceeds the limit of {lim.MAX_TASKS_PER_MEMBER}",
    ),
    (
        with_("members.0.replicas", 2),
        "members[0].replicas",
        "only a replica-set has this field (use tasks)",
    ),
    (
        with_("members.0.min_start", 2),
        "members[0].min_start",
        "only a replica-set has this field (use tasks)",
    ),
    (
        with_("members.0.min_running", 2),
        "members[0].min_running",
        "only a replica-set has this field (use tasks)",
    ),
    (with_("members.1.tasks", 2), "members[1].tasks", "only a job has tasks (use replicas)"),
    (with_("members.1.replicas", -3), "members[1].replicas", "must be a positive count (got -3)"),
    (
        with_("members.1.replicas", lim.MAX_REPLICAS_PER_MEMBER + 1),
        "members[1].replicas",
        f"{lim.MAX_REPLICAS_PER_MEMBER + 1} exceeds the limit of {lim.MAX_REPLICAS_PER_MEMBER}",
    ),
    (with_("members.1.min_start", 0), "members[1].min_start", "must be a positive count (got 0)"),
    (with_("members.1.min_start", 5), "members[1].min_start", "5 is more than replicas (4)"),
    (
        with_("members.1", replicas(replicas=4, min_start=2, min_running=0)),
        "members[1].min_running",
        "must be a positive count (got 0)",
    ),
    (
        with_("members.1", replicas(replicas=4, min_start=2, min_running=3)),
        "members[1].min_running",
        "3 is more than min_start (2)",
    ),
    (
        with_("members.1.min_running", 5),
        "members[1].min_running",
        "5 is more than min_start (4)",
    ),
    (
        with_("members.0.claims", [f"c{i}" for i in range(lim.MAX_CLAIMS_PER_MEMBER + 1)]),
        "members[0].claims",
        f"more than {lim.MAX_CLAIMS_PER_MEMBER} claims",
    ),
    (
        with_("members.0.task_claims", [f"c{i}" for i in range(lim.MAX_CLAIMS_PER_MEMBER + 1)]),
        "members[0].task_claims",
        f"more than {lim.MAX_CLAIMS_PER_MEMBER} claims",
    ),
    (
        with_("members.0.claims", ["gpus", "Gpus"]),
        "members[0].claims[1]",
        f"bad name 'Gpus': {NAME}",
    ),
    (with_("members.0.claims", ["a", "b", "a"]), "members[0].claims[2]", "duplicate claim 'a'"),
    (
        with_("members.0", job(claims=["gpus", "data"], task_claims=["dev", "data"])),
        "members[0].task_claims[1]",
        "'data' is a member claim already",
    ),
    (
        with_("members.0.topology", {"level": "Rack", "policy": "pack"}),
        "members[0].topology.level",
        f"bad name 'Rack': {NAME}",
    ),
    (with_("members.0.topology", "Pool"), "members[0].topology", f"bad name 'Pool': {NAME}"),
    # A shape.
    (
        with_("members.0.shape", {"gpu": lim.MAX_GPU_PER_TASK + 1}),
        "members[0].shape.gpu",
        f"must be between 0 and {lim.MAX_GPU_PER_TASK} (got {lim.MAX_GPU_PER_TASK + 1})",
    ),
    (
        with_("members.0.shape", {"cpu": lim.MAX_CPU_PER_TASK + 1}),
        "members[0].shape.cpu",
        f"must be between 0 and {lim.MAX_CPU_PER_TASK} (got {lim.MAX_CPU_PER_TASK + 1})",
    ),
    (
        with_("members.0.shape", {"mem_gb": lim.MAX_MEM_GB_PER_TASK + 1}),
        "members[0].shape.mem_gb",
        f"must be between 0 and {lim.MAX_MEM_GB_PER_TASK} (got {lim.MAX_MEM_GB_PER_TASK + 1})",
    ),
    (
        with_("members.0.shape", {"gpu": -1, "cpu": 2}),
        "members[0].shape.gpu",
        f"must be between 0 and {lim.MAX_GPU_PER_TASK} (got -1)",
    ),
    (
        with_("members.0.shape", {"gpu": 0}),
        "members[0].shape",
        "requests no resources: set gpu, cpu or mem_gb",
    ),
    (
        with_("members.0.shape", {"cpu": 4, "gpu_type": "H100"}),
        "members[0].shape.gpu_type",
        "set without any gpu in the shape",
    ),
    (
        with_("members.0.shape", {"gpu": 1, "gpu_type": "H100 "}),
        "members[0].shape.gpu_type",
        "bad gpu type 'H100 ': letters, digits and . _ / -, starting and ending with a letter "
        "or digit",
    ),
    (
        with_("members.0.shape", {"gpu": 1, "gpu_type": "h" * (lim.MAX_NAME_LENGTH + 1)}),
        "members[0].shape.gpu_type",
        f"bad gpu type '{'h' * (lim.MAX_NAME_LENGTH + 1)}': letters, digits and . _ / -, "
        "starting and ending with a letter or digit",
    ),
    # The failure policy.
    (
        with_("failure.max_group_restarts", lim.MAX_GROUP_RESTARTS + 1),
        "failure.max_group_restarts",
        f"must be between 0 and {lim.MAX_GROUP_RESTARTS} (got {lim.MAX_GROUP_RESTARTS + 1})",
    ),
    (
        with_("failure.max_group_restarts", -1),
        "failure.max_group_restarts",
        f"must be between 0 and {lim.MAX_GROUP_RESTARTS} (got -1)",
    ),
    (
        with_("failure.rules", [rule()] * (lim.MAX_FAILURE_RULES + 1)),
        "failure.rules",
        f"more than {lim.MAX_FAILURE_RULES} rules",
    ),
    (
        with_("failure.rules", [rule(), rule(members=["trainer", "ghost"])]),
        "failure.rules[1].members[1]",
        "unknown member 'ghost' (members: trainer, rollout)",
    ),
    (
        with_("failure.rules", [rule(reasons=[])]),
        "failure.rules[0].reasons",
        "empty: list reasons or use ['any']",
    ),
    (
        with_("failure.rules", [rule(max_restarts=lim.MAX_RESTARTS + 1)]),
        "failure.rules[0].max_restarts",
        f"must be between 0 and {lim.MAX_RESTARTS} (got {lim.MAX_RESTARTS + 1})",
    ),
    (
        with_("failure.rules", [rule(max_restarts=-1)]),
        "failure.rules[0].max_restarts",
        f"must be between 0 and {lim.MAX_RESTARTS} (got -1)",
    ),
    # Success.
    (
        with_("success", {"members": ["trainer"]}),
        "success.members",
        "only used with when = 'members' (when is 'all-jobs')",
    ),
    (
        with_("success", {"when": "any-job", "members": ["trainer"]}),
        "success.members",
        "only used with when = 'members' (when is 'any-job')",
    ),
    (
        with_("success", {"when": "members"}),
        "success.members",
        "when = 'members' needs at least one member name",
    ),
    (
        with_("success", {"when": "members", "members": ["trainer", "ghost"]}),
        "success.members[1]",
        "unknown member 'ghost' (members: trainer, rollout)",
    ),
    (
        with_("success", {"when": "members", "members": ["trainer", "rollout"]}),
        "success.members[1]",
        "'rollout' is a replica-set; only jobs succeed",
    ),
    # Labels.
    (
        with_("labels", {f"k{i}": "v" for i in range(lim.MAX_LABELS_PER_GROUP + 1)}),
        "labels",
        f"{lim.MAX_LABELS_PER_GROUP + 1} labels; the limit is {lim.MAX_LABELS_PER_GROUP}",
    ),
]


@pytest.mark.parametrize(
    ("doc", "path", "reason"), REFUSED, ids=[plain_id(i, r[1]) for i, r in enumerate(REFUSED)]
)
def test_each_refusal_names_its_field_and_says_exactly_why(
    doc: dict, path: str, reason: str
) -> None:
    with pytest.raises(SpecError) as refused:
        spec_from_object(doc)
    assert (refused.value.path, refused.value.reason) == (path, reason)


AT_THE_LIMIT = [
    with_("name", "x" * lim.MAX_NAME_LENGTH),
    with_("owner", "o" * lim.MAX_OWNER_LENGTH),
    with_("priority", lim.MAX_PRIORITY),
    with_("priority", -lim.MAX_PRIORITY),
    with_("members", [job(name=f"m{i}") for i in range(lim.MAX_MEMBERS_PER_GROUP)]),
    with_("members.0.tasks", lim.MAX_TASKS_PER_MEMBER),
    with_("members.1.replicas", lim.MAX_REPLICAS_PER_MEMBER),
    with_("members.1", replicas(replicas=4, min_start=4, min_running=4)),
    with_("members.1", replicas(replicas=4, min_start=1, min_running=1)),
    with_("members.0.profile", "p" * lim.MAX_PROFILE_LENGTH),
    with_("members.0.claims", [f"c{i}" for i in range(lim.MAX_CLAIMS_PER_MEMBER)]),
    with_("members.0.task_claims", [f"c{i}" for i in range(lim.MAX_CLAIMS_PER_MEMBER)]),
    with_(
        "members.0.shape",
        {
            "gpu": lim.MAX_GPU_PER_TASK,
            "cpu": lim.MAX_CPU_PER_TASK,
            "mem_gb": lim.MAX_MEM_GB_PER_TASK,
            "gpu_type": "g" * lim.MAX_NAME_LENGTH,
        },
    ),
    with_("members.0.shape", {"cpu": 1}),
    with_("members.0.shape", {"mem_gb": 1}),
    with_("placement", {"timeout": DAY_30, "backoff": DAY_30, "backoff_max": DAY_30}),
    with_("placement.max_attempts", lim.MAX_ATTEMPTS),
    with_("barrier.timeout", "1ns"),
    with_("failure.max_group_restarts", lim.MAX_GROUP_RESTARTS),
    with_("failure.rules", [rule(max_restarts=lim.MAX_RESTARTS)] * lim.MAX_FAILURE_RULES),
    with_("labels", {f"k{i}": "v" for i in range(lim.MAX_LABELS_PER_GROUP)}),
]


@pytest.mark.parametrize("doc", AT_THE_LIMIT)
def test_every_limit_itself_is_accepted(doc: dict) -> None:
    spec_from_object(doc)


def test_a_rule_without_members_or_reasons_applies_to_any_failure_of_any_member() -> None:
    spec = spec_from_object(with_("failure.rules", [rule()]))
    (only,) = spec.failure.rules
    assert (only.members, only.reasons, only.action, only.max_restarts) == (
        (),
        ("any",),
        "tolerate",
        0,
    )


def test_a_spec_over_the_size_limit_is_refused_before_parsing_counting_bytes_not_characters() -> (
    None
):
    padded = "#" + "é" * (lim.MAX_SPEC_BYTES // 2)  # about as many bytes as the limit allows
    over = len(padded.encode())
    assert len(padded) <= lim.MAX_SPEC_BYTES < over
    with pytest.raises(SpecError) as refused:
        parse_spec(padded, "toml")
    assert (refused.value.path, refused.value.reason) == (
        "",
        f"spec is {over} bytes; the limit is {lim.MAX_SPEC_BYTES}",
    )
    assert str(refused.value) == f"spec is {over} bytes; the limit is {lim.MAX_SPEC_BYTES}"


def test_a_spec_of_exactly_the_size_limit_is_parsed() -> None:
    doc = b'name = "grpo"\nowner = "alice"\n[[members]]\nname = "t"\nkind = "job"\nshape = {gpu = 1}\n'
    padded = doc + b"#" * (lim.MAX_SPEC_BYTES - len(doc))
    assert len(padded) == lim.MAX_SPEC_BYTES
    assert parse_spec(padded, "toml").name == "grpo"


@pytest.mark.parametrize("fmt", ["toml", "json"])
def test_a_document_that_does_not_parse_says_which_format_it_is_not(fmt: str) -> None:
    with pytest.raises(SpecError) as refused:
        parse_spec(b"name = = {", fmt)  # type: ignore[arg-type]
    assert refused.value.path == ""
    assert refused.value.reason.startswith(f"not valid {fmt.upper()}: ")


def test_an_unknown_format_is_refused_naming_the_ones_there_are() -> None:
    with pytest.raises(SpecError) as refused:
        parse_spec(b"{}", "yaml")  # type: ignore[arg-type]
    assert (refused.value.path, refused.value.reason) == (
        "",
        "unknown spec format 'yaml' (expected toml or json)",
    )


def test_a_document_as_text_parses_as_its_bytes_do() -> None:
    import json

    text = json.dumps(base())
    assert parse_spec(text, "json") == parse_spec(text.encode(), "json")


def test_a_spec_finds_its_members_by_name_and_names_the_one_it_lacks() -> None:
    spec = spec_from_object(base())
    assert spec.member("rollout").kind == "replica-set"
    assert spec.member("trainer").kind == "job"
    with pytest.raises(KeyError) as missing:
        spec.member("ghost")
    assert missing.value.args == ("ghost",)


def test_counts_left_out_default_to_one_task_or_replica_and_the_whole_set_to_start() -> None:
    spec = spec_from_object(with_("members", [job(), replicas()]))
    trainer, rollout = spec.member("trainer"), spec.member("rollout")
    assert (trainer.count, trainer.min_start, trainer.min_running) == (1, 1, 1)
    assert (rollout.count, rollout.min_start, rollout.min_running) == (1, 1, 1)
    started = spec_from_object(with_("members", [job(tasks=3), replicas(replicas=5, min_start=3)]))
    assert started.member("trainer").min_start == 3
    assert (started.member("rollout").min_start, started.member("rollout").min_running) == (3, 3)


@pytest.mark.parametrize(
    ("message", "path", "reason"),
    [
        ("Invalid enum value 'x' - at `$.top`", "top", "unknown value 'x'"),
        (
            "Invalid enum value 'x' - at `$.Xtra.mode`",
            "Xtra.mode",
            f"unknown value 'x' (expected one of: {MODES})",
        ),
        ("Invalid enum value 'x' - at `$.a.b[3]`", "a.b[3]", "unknown value 'x'"),
        ("Object contains unknown field `q` - at `$.a[1]`", "a[1].q", "unknown field"),
        ("Object contains unknown field `q`", "q", "unknown field"),
        ("Expected `int`, got `str`", "", "Expected `int`, got `str`"),
    ],
    ids=[
        "enum-at-top",
        "capital-field",
        "enum-of-unknown-field",
        "unknown-nested",
        "unknown-at-root",
        "no-path",
    ],
)
def test_msgspec_findings_are_turned_into_a_path_and_a_reason(
    message: str, path: str, reason: str
) -> None:
    """The translation itself, on messages as msgspec words them, including paths no
    document type has today (a field the allowed-values table does not know gets the
    value alone; an enum at the top level; a path at the root)."""
    import msgspec

    from costart.domain.spec import _spec_error_from_msgspec

    error = _spec_error_from_msgspec(msgspec.ValidationError(message))
    assert (error.path, error.reason) == (path, reason)


def test_a_placement_topology_is_kept_inline_or_by_its_placement_group_name() -> None:
    inline = spec_from_object(with_("placement.topology", {"level": "block", "policy": "spread"}))
    assert (inline.placement.topology.level, inline.placement.topology.policy) == (
        "block",
        "spread",
    )
    assert inline.placement.placement_group is None
    named = spec_from_object(with_("placement.topology", "pool-a"))
    assert (named.placement.topology, named.placement.placement_group) == (None, "pool-a")
    member = spec_from_object(with_("members.0.topology", "pool-b")).member("trainer")
    assert (member.topology, member.placement_group) == (None, "pool-b")
    rack = {"level": "rack", "policy": "pack"}
    packed = spec_from_object(with_("members.0.topology", rack)).member("trainer")
    assert packed.topology is not None and packed.placement_group is None
    assert (packed.topology.level, packed.topology.policy) == ("rack", "pack")
