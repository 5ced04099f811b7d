"""What each field of a spec document does: the one place its words are written.

Keyed by the field's path as `costart.domain.spec_reference` walks it from the document
types (list steps have no index; a dict's keys are ``<key>``-like placeholders). The
types give each field's type, default and requiredness; this table gives what it does,
its unit and its limit, with the limits read from `costart.domain.limits` and the run
table's own constants. The OpenAPI submit schema, `costart explain` and the docs' spec
reference read these words; a test keeps the table's paths equal to the types' paths.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from costart.domain import limits, run_table, slurm_table
from costart.domain.spec_types import DEFAULT_MAX_GROUP_RESTARTS, DEFAULT_MAX_RESTARTS

_NAME_RULE = (
    f"1-{limits.MAX_NAME_LENGTH} of a-z, 0-9 and '-', starting and ending with a letter or digit"
)
_DURATION = "a duration: a number and a unit, ns, us, ms, s, m or h, combined as in 1h30m"
_DAYS = f"at most {limits.MAX_DURATION_NS // (24 * 3600 * 10**9)} days"
_SLURM_NAME = "1-64 of letters, digits, '_', '.' and '-', not starting with '.' or '-'"
_PROBE_DAYS = f"longer than 0s, at most {run_table.MAX_DURATION_NS // (3600 * 10**9)} hours"


@dataclass(frozen=True)
class FieldText:
    """A field's words. ``bad``: one value the spec refuses at this field (empty: none
    worth showing); the reference shows the error it gets, produced by the parser.
    ``resolved``: for a field whose type leaves it out (None) and submit resolves it,
    the default in words, shown where the type's default would be."""

    what: str
    unit: str = ""
    limit: str = ""
    bad: tuple[Any, ...] = ()
    resolved: str = ""


DESCRIPTIONS: Final[dict[str, FieldText]] = {
    "name": FieldText(
        "The group's name: unique among the groups that have not ended; every CLI and REST "
        "address of the group uses it.",
        limit=_NAME_RULE,
        bad=("GRPO_42",),
    ),
    "owner": FieldText(
        "Who owns the group: an owner token of this user may scale and cancel it; the "
        "default owner of each member.",
        limit=f"1-{limits.MAX_OWNER_LENGTH} characters of letters, digits and . _ @ -",
        bad=("al ice",),
    ),
    "members": FieldText(
        "The group's members: each a batch job or a replica set with its own shape, owner "
        "and claims, placed all-or-nothing with the others.",
        limit=f"1-{limits.MAX_MEMBERS_PER_GROUP} members, names unique in the group",
        bad=([],),
    ),
    "members.name": FieldText(
        "The member's name, unique in its group (`GROUP/MEMBER` in commands).",
        limit=_NAME_RULE,
        bad=("Trainer",),
    ),
    "members.kind": FieldText(
        '"job": a finite batch job of `tasks` tasks that succeeds or fails; "replica-set": '
        "a long-running service of `replicas` replicas, scaled on its own after the start "
        "and stopped when the group succeeds.",
        bad=("service",),
    ),
    "members.shape": FieldText(
        "The resources of one task or replica; every task of the member has this shape.",
        limit="at least one of gpu, cpu, mem_gb above 0",
        bad=({},),
    ),
    "members.shape.gpu": FieldText(
        "Accelerators per task.",
        unit="accelerators",
        limit=f"0-{limits.MAX_GPU_PER_TASK}",
        bad=(-1,),
    ),
    "members.shape.cpu": FieldText(
        "CPU cores per task.", unit="cores", limit=f"0-{limits.MAX_CPU_PER_TASK}", bad=(-1,)
    ),
    "members.shape.mem_gb": FieldText(
        "Memory per task.", unit="GB", limit=f"0-{limits.MAX_MEM_GB_PER_TASK}", bad=(-1,)
    ),
    "members.shape.gpu_type": FieldText(
        "The accelerator type a task needs (a node's `gpu_type` in the cluster file); "
        "unset: any type.",
        limit="only with gpu above 0; letters, digits and . _ / -",
        bad=("H 100",),
    ),
    "members.owner": FieldText(
        "The member's owner, when it is not the group's (a team's service in another "
        "team's run); unset: the group's owner.",
        limit=f"1-{limits.MAX_OWNER_LENGTH} characters of letters, digits and . _ @ -",
        bad=("",),
    ),
    "members.profile": FieldText(
        "The member's application profile or image, its own identity outside costart "
        "(shown, never interpreted).",
        limit=f"at most {limits.MAX_PROFILE_LENGTH} printable characters",
        bad=("a\tb",),
    ),
    "members.tasks": FieldText(
        "A job's tasks: all of them are placed, started at the barrier and must succeed. "
        'Unset: 1. Only for kind = "job".',
        unit="tasks",
        limit=f"1-{limits.MAX_TASKS_PER_MEMBER}",
        bad=(0,),
    ),
    "members.replicas": FieldText(
        "A replica set's desired replicas (`costart scale` changes it after the start). "
        'Unset: 1. Only for kind = "replica-set".',
        unit="replicas",
        limit=f"1-{limits.MAX_REPLICAS_PER_MEMBER}",
        bad=(0,),
    ),
    "members.min_start": FieldText(
        "The replicas that must be placed (and their claims READY) before the group's "
        "barrier releases: the member's part of the gang. Unset: `replicas`. Only for a "
        "replica set.",
        unit="replicas",
        limit="1 to replicas",
        bad=(0,),
    ),
    "members.min_running": FieldText(
        "The running floor: a tolerated failure leaves the group DEGRADED, one that leaves "
        "fewer than this many replicas fails the group. Unset: `min_start`. Only for a "
        "replica set.",
        unit="replicas",
        limit="1 to min_start",
        bad=(0,),
    ),
    "members.topology": FieldText(
        "Where the member's tasks go: inline `{ level, policy, required }`, or the name "
        "of a placement group of the cluster file. Unset: anywhere.",
        bad=("No Such",),
    ),
    "members.topology.level": FieldText(
        "The topology level of the cluster file (rack, block, ...) whose domains the tasks "
        "are packed into or spread across.",
        limit=_NAME_RULE,
        bad=("Rack",),
    ),
    "members.topology.policy": FieldText(
        '"pack": all tasks in one domain of the level; "spread": across its domains.',
        bad=("scatter",),
    ),
    "members.topology.required": FieldText(
        "true: a placement that breaks the policy is refused (the group waits); false: "
        "the policy is a preference."
    ),
    "members.claims": FieldText(
        "The member's claims: resources that must be READY before the start (a dataset "
        "staged, weights cached). One report each, from a claim driver or a probe.",
        limit=f"at most {limits.MAX_CLAIMS_PER_MEMBER}, names unique",
        bad=(["gpus", "gpus"],),
    ),
    "members.task_claims": FieldText(
        "Each task's own claims (a device healthy on its node): one report per task.",
        limit=f"at most {limits.MAX_CLAIMS_PER_MEMBER}, none also in claims",
        bad=(["Dev"],),
    ),
    "members.max_runtime": FieldText(
        'The member\'s declared run-time limit: it fails with reason "max-runtime" when '
        "it has run this long. A backfill reservation lends capacity to members that "
        "declare one. Unset: no limit.",
        unit=_DURATION,
        limit=f"longer than 0s, {_DAYS}",
        bad=("0s",),
    ),
    "members.preemptible": FieldText(
        'true: a backfill reservation may stop the member (reason "preempted", which '
        "never spends a restart budget) to take its capacity back."
    ),
    "members.run": FieldText(
        "What `costart agent` runs for each task, and a probe per claim. The controller "
        "validates and stores it and never runs it. Unset: the host starts the tasks."
    ),
    "members.run.argv": FieldText(
        "The program and its arguments, run without a shell.",
        limit=f"1-{run_table.MAX_ARGV} arguments of at most {run_table.MAX_ARG_CHARS} "
        "characters, no NUL",
        bad=([],),
    ),
    "members.run.env": FieldText(
        "Environment variables added for each task. Stored in the log for ever and shown "
        "to the owner, admins and the agents running it: put secrets in env_secrets.",
        limit=f"at most {run_table.MAX_ENV} names; no COSTART_ names",
        bad=({"COSTART_NODE": "x"},),
    ),
    "members.run.cwd": FieldText(
        "The task's working directory, beneath the agent's work root. Unset: the work root.",
        limit=f"a relative path without '..', at most {run_table.MAX_PATH_CHARS} characters",
        bad=("../etc",),
    ),
    "members.run.grace": FieldText(
        "On a stop, the time from SIGTERM to SIGKILL.",
        unit=_DURATION,
        limit=_PROBE_DAYS,
        bad=("0s",),
    ),
    "members.run.port": FieldText(
        "Task i serves on port + i; every task learns its peers' addresses "
        "(COSTART_PEERS). Unset: no port.",
        limit=f"1-{run_table.MAX_PORT}, not overlapping another member's ports",
        bad=(0,),
    ),
    "members.run.log_dir": FieldText(
        "Where each task's output goes on its node: "
        "log_dir/GROUP-ID/MEMBER/I.attempt-A.log beneath the work root.",
        limit=f"a relative path without '..', at most {run_table.MAX_PATH_CHARS} characters",
        bad=("/var/log",),
    ),
    "members.run.probes": FieldText(
        "One probe per claim, keyed by the claim's name: the agent turns the claim READY "
        "when its probe passes.",
        limit="each key a claim of the member; a probe may not reach a port a member of "
        "the group serves on",
        bad=({"nosuch": {"file": "x"}},),
    ),
    "members.run.probes.<claim>.exec": FieldText(
        "An exec probe: the command passes when it exits 0. Exactly one of exec, http, tcp, file.",
        limit=f"1-{run_table.MAX_ARGV} arguments",
        bad=([],),
    ),
    "members.run.probes.<claim>.http": FieldText(
        "An http probe: the URL passes on a 2xx answer (redirects are not followed).",
        limit="http:// or https:// URL; never a link-local or cloud metadata address",
        bad=("http://169.254.169.254/latest",),
    ),
    "members.run.probes.<claim>.tcp": FieldText(
        "A tcp probe: passes when host:port accepts a connection.",
        limit="host:port or [v6]:port; never a link-local or cloud metadata address",
        bad=("db",),
    ),
    "members.run.probes.<claim>.file": FieldText(
        "A file probe: passes when the path exists, in the task's directory.",
        limit=f"a relative path without '..', at most {run_table.MAX_PATH_CHARS} characters",
        bad=("../weights",),
    ),
    "members.run.probes.<claim>.period": FieldText(
        "Time between two checks.", unit=_DURATION, limit=_PROBE_DAYS, bad=("0s",)
    ),
    "members.run.probes.<claim>.timeout": FieldText(
        "Time one check may take before it counts as a miss.",
        unit=_DURATION,
        limit=_PROBE_DAYS,
        bad=("soon",),
    ),
    "members.run.probes.<claim>.fail_after": FieldText(
        "Consecutive misses after which the claim is reported FAILED; 0: never (the "
        "barrier timeout decides).",
        unit="checks",
        limit=f"0-{run_table.MAX_FAIL_AFTER}",
        bad=(-1,),
    ),
    "members.run.slurm": FieldText(
        "How `costart slurm` submits each task as a Slurm job: the partition, the account "
        "Slurm bills, the QoS, and more sbatch options from an allow-list. Slurm's time "
        "limit is the member's max_runtime plus the run table's grace. Unset: the "
        "adapter's defaults."
    ),
    "members.run.slurm.partition": FieldText(
        "The Slurm partition (sbatch --partition). Unset: the adapter's --partition, or "
        "Slurm's default partition.",
        limit=_SLURM_NAME,
        bad=("gpu queue",),
    ),
    "members.run.slurm.account": FieldText(
        "The Slurm account the jobs are billed to (sbatch --account); the OS account they "
        "run as is the owner's, from the adapter's owner table.",
        limit=_SLURM_NAME,
        bad=("physics;rm",),
    ),
    "members.run.slurm.qos": FieldText(
        "The Slurm quality of service (sbatch --qos).", limit=_SLURM_NAME, bad=("$(id)",)
    ),
    "members.run.slurm.options": FieldText(
        "More sbatch options, each one --NAME=VALUE, never passed through a shell. "
        "Allowed: "
        + ", ".join(f"--{name}" for name in sorted(slurm_table.ALLOWED_OPTIONS))
        + "; the node, shape, hold, job name, output, time limit and the account the "
        "job runs as are costart's.",
        limit=f"at most {slurm_table.MAX_OPTIONS} options, each name once, each value "
        "matched whole against its option's pattern",
        bad=(["--uid=0"],),
    ),
    "members.run.env_secrets": FieldText(
        "Environment variables whose values the node reads from its secrets source "
        "(`--secrets-dir DIR/OWNER/REF`), for this owner only. Only the names and "
        "references are stored; values never enter the log.",
        limit="references of 1-8 segments of letters, digits and . _ -, joined by /",
        bad=({"HF_TOKEN": "../x"},),
    ),
    "priority": FieldText(
        "Higher first: reservations are granted capacity in order of priority, then submission.",
        limit=f"-{limits.MAX_PRIORITY} to {limits.MAX_PRIORITY}",
        bad=(10**7,),
    ),
    "placement": FieldText("How the group is placed: its mode, deadline and retries."),
    "placement.mode": FieldText(
        '"atomic": the whole group in one scheduling session or not at all, nothing held '
        'between sessions; "reserve": when the gang does not fit, open a reservation that '
        'holds capacity as it frees, in one global order; "reserve-backfill": reserve, and '
        "lend what the reservation holds to preemptible work or work with a max_runtime "
        'that ends in time; "plan-ahead": plan the gang\'s start from when running work '
        "ends (its declared max_runtime), claim the planned nodes without holding them, and "
        "let lower work start there only if its max_runtime ends before that start; where "
        "no start can be planned (work without a limit), reserve.",
        bad=("greedy",),
    ),
    "placement.timeout": FieldText(
        "The reservation's deadline: a group still not placed this long after its "
        "reservation opened releases everything it holds and retries after the backoff.",
        unit=_DURATION,
        limit=f"longer than 0s, {_DAYS}",
        bad=("15 minutes",),
    ),
    "placement.backoff": FieldText(
        "The first delay before the group is tried again after a release; it doubles on "
        "each release, up to backoff_max.",
        unit=_DURATION,
        limit=_DAYS,
        bad=("-1m",),
    ),
    "placement.backoff_max": FieldText(
        "The longest backoff.",
        unit=_DURATION,
        limit=f"not shorter than backoff, {_DAYS}",
        bad=("1s",),
    ),
    "placement.max_attempts": FieldText(
        "Placement attempts before the group fails; left out: no limit (ADR 0071).",
        unit="attempts",
        limit=f"1-{limits.MAX_ATTEMPTS} (0 is refused: leave it out for no limit)",
        bad=(0,),
        resolved="no limit",
    ),
    "placement.topology": FieldText(
        "A topology for the whole group (all members together): inline `{ level, policy, "
        "required }` or the name of a placement group of the cluster file.",
        bad=("Block",),
    ),
    "placement.topology.level": FieldText(
        "The topology level whose domains the whole group is packed into or spread across.",
        limit=_NAME_RULE,
        bad=("Block",),
    ),
    "placement.topology.policy": FieldText(
        '"pack": the whole group in one domain of the level; "spread": across its domains.',
        bad=("scatter",),
    ),
    "placement.topology.required": FieldText(
        "true: a placement that breaks the policy is refused; false: a preference."
    ),
    "barrier": FieldText("The start barrier: how long claims may take once placed."),
    "barrier.timeout": FieldText(
        "Every claim must be READY within this after the group is placed; otherwise the "
        "placement is released and retried after the backoff.",
        unit=_DURATION,
        limit=f"longer than 0s, {_DAYS}",
        bad=("0s",),
    ),
    "failure": FieldText("What a member's failure does to the group."),
    "failure.default": FieldText(
        'The action for a failure no rule matches: "fail-group" (stop everything), '
        '"restart-member", "restart-group" or "tolerate" (carry on while min_running '
        "holds). A restart-member here spends default_max_restarts per member.",
        bad=("retry",),
    ),
    "failure.default_max_restarts": FieldText(
        "How often a default of restart-member restarts each member (node-lost and "
        "preempted never spend it); spent: fail-group. 0: no restart; left out: "
        f"{DEFAULT_MAX_RESTARTS} when the default is restart-member, else 0.",
        unit="restarts per member",
        limit=f"0-{limits.MAX_RESTARTS}",
        bad=(-1,),
        resolved=f"{DEFAULT_MAX_RESTARTS} with a default of restart-member, else 0",
    ),
    "failure.max_group_restarts": FieldText(
        "How often restart-group may restart the whole group (node-lost and preempted "
        "do not count); spent: fail-group. 0: never; left out: "
        f"{DEFAULT_MAX_GROUP_RESTARTS} when the default action or a rule restarts the "
        "group, else 0 (the log records the resolved number).",
        unit="restarts",
        limit=f"0-{limits.MAX_GROUP_RESTARTS}",
        bad=(-1,),
        resolved=f"{DEFAULT_MAX_GROUP_RESTARTS} when something restarts the group, else 0",
    ),
    "failure.rules": FieldText(
        "Failure rules, the first match wins: a rule matches a failure of one of its "
        "members (all when empty) with one of its reasons.",
        limit=f"at most {limits.MAX_FAILURE_RULES} rules",
    ),
    "failure.rules.action": FieldText(
        'The action: "fail-group", "restart-member" (relaunch the failed member\'s tasks; '
        'spends the member\'s budget), "restart-group" (release and place the whole group '
        'again; spends max_group_restarts) or "tolerate".',
        bad=("reboot",),
    ),
    "failure.rules.reasons": FieldText(
        "The failure reasons the rule matches: error, oom, node-lost, preempted, "
        'claim-failed, max-runtime, refused, or "any".',
        limit="at least one",
        bad=([],),
    ),
    "failure.rules.members": FieldText(
        "The members the rule matches; empty: every member.",
        limit="names of the group's members",
        bad=(["nobody"],),
    ),
    "failure.rules.max_restarts": FieldText(
        "The restart budget of each member this rule matches, for restart-member: a "
        "failure with the budget spent escalates to fail-group (node-lost and preempted "
        "never spend it). 0: no restart; left out: "
        f"{DEFAULT_MAX_RESTARTS} (the log records the resolved number).",
        unit="restarts per member",
        limit=f"0-{limits.MAX_RESTARTS}",
        bad=(-1,),
        resolved=f"{DEFAULT_MAX_RESTARTS}",
    ),
    "success": FieldText("When the group has succeeded (its services are then stopped)."),
    "success.when": FieldText(
        '"all-jobs": every job succeeded; "any-job": the first job that succeeds; '
        '"members": the jobs listed in members.',
        bad=("first",),
    ),
    "success.members": FieldText(
        'The jobs that must succeed, with when = "members".',
        limit='job names of the group; only with when = "members"',
        bad=(["trainer"],),
    ),
    "labels": FieldText(
        "Key-value labels to select groups by (`costart get groups -l team=rl`).",
        limit=f"at most {limits.MAX_LABELS_PER_GROUP}; keys and values of letters, digits "
        "and . _ / -",
        bad=({"team": "r l"},),
    ),
}
