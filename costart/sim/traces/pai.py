"""Alibaba PAI 2020 multi-role jobs as co-start groups.

Each job (``job_name``) with two or more roles (ps, worker, evaluator, chief, ...) is a
group; each role is a member and its distinct instances are the member's tasks. The
sample lacks resource requests and submit times, so this importer assumes them and says
so in `Workload.assumptions`.
"""

from __future__ import annotations

import csv
import gzip
from collections.abc import Iterator
from pathlib import Path

import msgspec

from costart.domain import limits
from costart.domain.spec import spec_from_object
from costart.sim.workload import Arrival, MemberRun, Workload

SECOND_NS = 10**9
INSTANCE_FILE = "alibaba_v2020_pai_instance_table_tail_recovered.csv.gz"
MACHINE_FILE = "alibaba_v2020_pai_machine_spec.csv"
JOBS_FILE = "alibaba_v2020_pai_instance_tail_jobs.csv"
SERVICE_ROLES = frozenset({"ps", "OpenmpiTracker"})
GPU_ROLES = frozenset(
    {"worker", "chief", "evaluator", "PyTorchWorker", "OpenmpiWorker", "DecoderWorker"}
)
DEFAULT_RUNTIME_S = 3600

ASSUMPTIONS = [
    "PAI: submit time = the job's earliest instance start (the job table is not in the sample)",
    "PAI: each instance requests 1 GPU (of its machine's type) for worker/chief/evaluator roles "
    "and 0 GPU for ps and other roles; 8 CPU cores and 32 GB memory per instance "
    "(the task table with plan_cpu/plan_gpu/plan_mem is not in the sample)",
    "PAI: ps (and OpenmpiTracker) roles are services (replica sets) stopped when the jobs end; "
    "every other role is a job that succeeds after its observed run time",
    f"PAI: a role's run time = its latest end - earliest start; {DEFAULT_RUNTIME_S}s when absent",
    "PAI: only complete multi-role jobs are imported; re-launch rows count once per instance",
]


class Machine(msgspec.Struct, frozen=True):
    name: str
    gpu_type: str
    cpu: int
    mem_gb: int
    gpu: int


def read_machines(traces: Path) -> list[Machine]:
    """The PAI machine list (the cluster), in file order."""
    with (traces / MACHINE_FILE).open(newline="") as handle:
        return [
            Machine(
                row["machine"],
                row["gpu_type"],
                int(row["cap_cpu"]),
                int(row["cap_mem"]),
                int(row["cap_gpu"]),
            )
            for row in csv.DictReader(handle)
        ]


class _Role(msgspec.Struct):
    instances: set[str] = msgspec.field(default_factory=set)
    starts: list[float] = msgspec.field(default_factory=list)
    ends: list[float] = msgspec.field(default_factory=list)
    machines: list[str] = msgspec.field(default_factory=list)


def _rows(traces: Path) -> Iterator[dict[str, str]]:
    with gzip.open(traces / INSTANCE_FILE, "rt", newline="") as handle:
        yield from csv.DictReader(handle)


def _member_name(role: str) -> str:
    name = "".join(ch if ch.isalnum() else "-" for ch in role.lower()).strip("-")
    return name[: limits.MAX_NAME_LENGTH] or "role"


def import_pai(traces: Path, *, max_groups: int | None = None) -> Workload:
    """Complete multi-role PAI jobs as arrivals, ordered by submit time then job name."""
    complete = _complete_jobs(traces)
    gpu_type_of = {m.name: m.gpu_type for m in read_machines(traces)}
    jobs: dict[str, dict[str, _Role]] = {}
    for row in _rows(traces):
        job = row["job_name"]
        if job not in complete:
            continue
        role = jobs.setdefault(job, {}).setdefault(row["task_name"], _Role())
        role.instances.add(row["inst_name"])
        if row["start_time"]:
            role.starts.append(float(row["start_time"]))
        if row["end_time"]:
            role.ends.append(float(row["end_time"]))
        if row["machine"]:
            role.machines.append(row["machine"])
    arrivals = []
    for job in sorted(jobs):
        roles = jobs[job]
        if len(roles) < 2:
            continue
        arrival = _arrival(job, roles, gpu_type_of)
        if arrival is not None:
            arrivals.append(arrival)
    arrivals.sort(key=lambda a: (a.at_ns, a.spec.name))
    if max_groups is not None:
        arrivals = arrivals[:max_groups]
    return Workload(name="pai-2020", arrivals=arrivals, assumptions=list(ASSUMPTIONS))


def _complete_jobs(traces: Path) -> set[str]:
    with (traces / JOBS_FILE).open(newline="") as handle:
        return {
            row["job_name"]
            for row in csv.DictReader(handle)
            if row["complete_in_sample"] == "1" and row["multi_role"] == "1"
        }


def _arrival(job: str, roles: dict[str, _Role], gpu_type_of: dict[str, str]) -> Arrival | None:
    starts = [s for r in roles.values() for s in r.starts]
    if not starts:
        return None
    submit_s = min(starts)
    members, runs = [], {}
    for role_name in sorted(roles):
        role = roles[role_name]
        name = _member_name(role_name)
        gpu_types = sorted({gpu_type_of.get(m, "") for m in role.machines} - {"", "CPU", "MISC"})
        wants_gpu = role_name in GPU_ROLES and bool(gpu_types)
        shape: dict[str, object] = {"cpu": 8, "mem_gb": 32}
        if wants_gpu:
            shape |= {"gpu": 1, "gpu_type": gpu_types[0]}
        count = min(len(role.instances), limits.MAX_TASKS_PER_MEMBER)
        service = role_name in SERVICE_ROLES
        member: dict[str, object] = {
            "name": name,
            "kind": "replica-set" if service else "job",
            "profile": f"pai-{role_name}",
            "shape": shape,
            ("replicas" if service else "tasks"): count,
        }
        members.append(member)
        runtime_s = (
            (max(role.ends) - min(role.starts)) if role.ends and role.starts else DEFAULT_RUNTIME_S
        )
        runs[name] = MemberRun(runtime_ns=None if service else max(int(runtime_s), 1) * SECOND_NS)
    if all(m["kind"] == "replica-set" for m in members):
        return None  # nothing would ever finish: not a batch job
    spec = spec_from_object(
        {
            "name": f"pai-{job[:16]}",
            "owner": "pai",
            "members": members,
            "placement": {"mode": "reserve"},
        }
    )
    return Arrival(at_ns=int(submit_s) * SECOND_NS, spec=spec, runs=runs)
