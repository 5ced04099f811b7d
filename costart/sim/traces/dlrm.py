"""The 2025 disaggregated DLRM serving trace as co-start groups.

An app's CN (CPU) and HN (GPU) instances created in the same 60-second wave form one
group with two replica-set members; a wave needs both roles to be a co-start group. The
instances' requests come from the trace; run time = deletion - creation (to the end of
the trace when still alive).
"""

from __future__ import annotations

import csv
import math
from pathlib import Path

import msgspec

from costart.domain import limits
from costart.domain.spec import spec_from_object
from costart.sim.workload import Arrival, MemberRun, Workload

SECOND_NS = 10**9
TRACE_FILE = "alibaba_v2025_disaggregated_DLRM_trace.csv"
WAVE_S = 60

ASSUMPTIONS = [
    f"DLRM: a co-start group is an app's CN and HN instances created in one {WAVE_S}s wave; "
    "waves with a single role and instances that existed before the trace start are left out",
    "DLRM: memory_request is in GB; cpu_request is rounded up to whole cores",
    "DLRM: each role is a replica set; its shape is the largest request among its instances",
    "DLRM: the group runs until its last instance is deleted (or the trace ends)",
]


class _Wave(msgspec.Struct):
    created_s: int
    roles: dict[str, list[dict[str, str]]] = msgspec.field(default_factory=dict)


def import_dlrm(traces: Path, *, max_groups: int | None = None) -> Workload:
    waves: dict[tuple[str, int], _Wave] = {}
    trace_end_s = 0
    with (traces / TRACE_FILE).open(newline="") as handle:
        for row in csv.DictReader(handle):
            for column in ("creation_time", "deletion_time"):
                if row[column]:
                    trace_end_s = max(trace_end_s, int(float(row[column])))
            if not row["creation_time"]:
                continue
            created = int(float(row["creation_time"]))
            wave = waves.setdefault((row["app_name"], created // WAVE_S), _Wave(created))
            wave.created_s = min(wave.created_s, created)
            wave.roles.setdefault(row["role"], []).append(row)
    arrivals = []
    for (app, bucket), wave in sorted(waves.items()):
        if set(wave.roles) >= {"CN", "HN"}:
            arrivals.append(_arrival(app, bucket, wave, trace_end_s))
    arrivals.sort(key=lambda a: (a.at_ns, a.spec.name))
    if max_groups is not None:
        arrivals = arrivals[:max_groups]
    return Workload(name="dlrm-2025", arrivals=arrivals, assumptions=list(ASSUMPTIONS))


def _arrival(app: str, bucket: int, wave: _Wave, trace_end_s: int) -> Arrival:
    members = []
    end_s = wave.created_s
    for role in ("CN", "HN"):
        rows = wave.roles[role]
        count = min(len(rows), limits.MAX_REPLICAS_PER_MEMBER)
        shape: dict[str, object] = {
            "cpu": max(math.ceil(float(r["cpu_request"])) for r in rows),
            "mem_gb": max(math.ceil(float(r["memory_request"])) for r in rows),
        }
        gpu = max(int(float(r["gpu_request"] or 0)) for r in rows)
        if gpu:
            shape["gpu"] = gpu
        members.append(
            {
                "name": role.lower(),
                "kind": "replica-set",
                "profile": f"dlrm-{role}",
                "replicas": count,
                "shape": shape,
            }
        )
        for r in rows:
            end_s = max(
                end_s, int(float(r["deletion_time"])) if r["deletion_time"] else trace_end_s
            )
    name = f"{app.replace('_', '-')}-w{bucket}"
    spec = spec_from_object(
        {
            "name": name,
            "owner": app.replace("_", "-"),
            "members": members,
            "placement": {"mode": "reserve"},
            "success": {"when": "all-jobs"},
        }
    )
    # Services never finish on their own: the simulator ends the group after its lifetime.
    return Arrival(
        at_ns=wave.created_s * SECOND_NS,
        spec=spec,
        runs={"cn": MemberRun(), "hn": MemberRun()},
        lifetime_ns=max(end_s - wave.created_s, 1) * SECOND_NS,
    )
