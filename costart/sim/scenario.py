"""The simulation scenario file (``scenarios/sim-*.toml``): strict, errors name the field.

```toml
name = "deadlock-trap"
cluster = "cluster-demo.toml"        # a cluster file, relative to this file
session_interval = "10s"             # a scheduling session (schedule + tick) this often
horizon = "12h"                      # stop at the latest then
task_skew = "20s"                    # independent policy: each task is submitted up to this late
snapshot_every = 500                 # controller snapshots every N events

[[workloads]]
name = "gang"                        # arrivals are named gang-000, gang-001, ...
spec = "rl-post-training.toml"       # a group spec file (relative) ...
# group = { owner = "x", members = [...] }   # ... or an inline group spec (no name)
arrivals = { count = 3, every = "1s", start = "0s" }   # or rate_per_hour = 2.0 (Poisson)
claim_delay = { dist = "exp", mean = "30s" }
claim_fail = 0.01
lifetime = { dist = "const", value = "2h" }   # groups of services only: cancelled then
[workloads.runs.trainer]             # per member (optional)
runtime = { dist = "lognormal", median = "1h", sigma = 0.5 }
fail = 0.05                          # probability a start crashes
fail_reasons = ["error", "oom"]
crash_after = { dist = "exp", mean = "2h" }   # services: when a crashing replica dies

[faults]
node_loss = { count = 2, at = { dist = "uniform", low = "10m", high = "3h" }, down_for = { dist = "exp", mean = "20m" } }
controller_crash = { count = 2, at = { dist = "uniform", low = "0s", high = "6h" } }
```

`load_scenario` returns the document; `costart.sim.generate` draws a run from it.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import msgspec

from costart.domain.durations import parse_duration_ns
from costart.domain.errors import SpecError
from costart.domain.spec import parse_spec, spec_from_object
from costart.domain.spec_types import FailureReason, GroupSpec
from costart.files import read_named_file
from costart.placement.cluster import ClusterError
from costart.placement.cluster_file import ClusterDefinition, load_cluster
from costart.sim.distributions import ZERO, Dist, DistError, Exp

MAX_ARRIVALS = 100_000
MAX_FAULTS = 10_000
_NAME = re.compile(r"[a-z0-9]([a-z0-9-]{0,45}[a-z0-9])?")  # matched whole
_AT = re.compile(r"^(?P<reason>.*) - at `\$(?P<path>[^`]*)`$", re.DOTALL)


class ScenarioError(ValueError):
    """An invalid scenario. ``path`` names the field (``workloads[1].arrivals.count``)."""

    def __init__(self, path: str, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(f"{path}: {reason}" if path else reason)


class _Doc(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
    """Base of the document types: unknown fields are errors."""


class ArrivalsDoc(_Doc, frozen=True):
    count: int
    every: str | None = None
    rate_per_hour: float | None = None
    start: str = "0s"


class ScenarioRunDoc(_Doc, frozen=True):
    runtime: Dist | None = None
    fail: float = 0.0
    fail_reasons: list[FailureReason] = msgspec.field(default_factory=lambda: ["error"])
    crash_after: Dist | None = None
    claim_delay: Dist | None = None
    claim_fail: float | None = None


class WorkloadDoc(_Doc, frozen=True):
    name: str
    arrivals: ArrivalsDoc
    spec: str | None = None
    group: dict[str, Any] | None = None
    claim_delay: Dist = ZERO
    claim_fail: float = 0.0
    lifetime: Dist | None = None
    runs: dict[str, ScenarioRunDoc] = msgspec.field(default_factory=dict)


class NodeLossDoc(_Doc, frozen=True):
    count: int
    at: Dist
    down_for: Dist


class CrashDoc(_Doc, frozen=True):
    count: int
    at: Dist
    down_for: Dist = ZERO


class FaultsDoc(_Doc, frozen=True):
    node_loss: NodeLossDoc | None = None
    controller_crash: CrashDoc | None = None


class OutsideLoadDoc(_Doc, frozen=True):
    """The ``[outside_load]`` table: the host's other work in a run with the
    ``outside-load`` allocator (`costart.sim.outside_load`); every field optional."""

    utilization: float = 0.3  # the share of the cluster's GPUs other work asks for
    runtime: Dist = Exp("30m")
    gpus: list[int] = msgspec.field(default_factory=lambda: [1, 2, 4, 8])
    race: float = 0.01  # the probability that another scheduler beats one bind


class ScenarioDoc(_Doc, frozen=True):
    name: str
    cluster: str
    workloads: list[WorkloadDoc]
    description: str = ""
    session_interval: str = "10s"
    horizon: str = "24h"
    task_skew: str = "30s"
    snapshot_every: int = 1000
    faults: FaultsDoc = msgspec.field(default_factory=FaultsDoc)
    outside_load: OutsideLoadDoc = msgspec.field(default_factory=OutsideLoadDoc)


class Scenario(msgspec.Struct, frozen=True):
    """A checked scenario: the document, its cluster and each workload's group spec."""

    doc: ScenarioDoc
    cluster: ClusterDefinition
    specs: tuple[GroupSpec, ...]
    path: str = ""


def _duration(path: str, text: str, *, positive: bool = False) -> int:
    try:
        ns = parse_duration_ns(text)
    except ValueError as error:
        raise ScenarioError(path, str(error)) from None
    if positive and ns <= 0:
        raise ScenarioError(path, "must be longer than 0s")
    return ns


def _dist(path: str, dist: Dist | None) -> None:
    if dist is None:
        return
    try:
        dist.check()
    except DistError as error:
        raise ScenarioError(f"{path}.{error.path}", error.reason) from None


def _probability(path: str, value: float | None) -> None:
    if value is not None and not 0.0 <= value <= 1.0:
        raise ScenarioError(path, f"must be a probability between 0 and 1 (got {value})")


def _count(path: str, value: int, high: int) -> None:
    if not 0 <= value <= high:
        raise ScenarioError(path, f"must be between 0 and {high} (got {value})")


def _spec(path: str, doc: WorkloadDoc, base: Path) -> GroupSpec:
    if (doc.spec is None) == (doc.group is None):
        raise ScenarioError(path, "give exactly one of spec (a file) or group (inline)")
    where = f"{path}.spec" if doc.spec is not None else f"{path}.group"
    try:
        if doc.spec is not None:
            spec_path = base / doc.spec
            if not spec_path.is_file():
                raise ScenarioError(where, f"no such spec file {doc.spec!r}")
            return parse_spec(spec_path.read_bytes(), "toml")
        return spec_from_object({"name": doc.name, **(doc.group or {})})
    except SpecError as error:
        raise ScenarioError(
            f"{where}.{error.path}" if error.path else where, error.reason
        ) from None


def _check_workload(path: str, doc: WorkloadDoc, spec: GroupSpec) -> None:
    arrivals = doc.arrivals
    _count(f"{path}.arrivals.count", arrivals.count, MAX_ARRIVALS)
    _duration(f"{path}.arrivals.start", arrivals.start)
    if (arrivals.every is None) == (arrivals.rate_per_hour is None):
        raise ScenarioError(f"{path}.arrivals", "give exactly one of every or rate_per_hour")
    if arrivals.every is not None:
        _duration(f"{path}.arrivals.every", arrivals.every)
    if arrivals.rate_per_hour is not None and arrivals.rate_per_hour <= 0:
        raise ScenarioError(f"{path}.arrivals.rate_per_hour", "must be positive")
    _dist(f"{path}.claim_delay", doc.claim_delay)
    _probability(f"{path}.claim_fail", doc.claim_fail)
    _dist(f"{path}.lifetime", doc.lifetime)
    names = [m.name for m in spec.members]
    for member, run in sorted(doc.runs.items()):
        where = f"{path}.runs.{member}"
        if member not in names:
            raise ScenarioError(where, f"the group has no member {member!r} ({', '.join(names)})")
        kind = spec.member(member).kind
        if kind == "replica-set" and run.runtime is not None:
            raise ScenarioError(f"{where}.runtime", "a replica-set runs until the group ends")
        if kind == "replica-set" and run.fail and run.crash_after is None:
            raise ScenarioError(f"{where}.crash_after", "needed when a replica-set may fail")
        for field, dist in (("runtime", run.runtime), ("crash_after", run.crash_after)):
            _dist(f"{where}.{field}", dist)
        _dist(f"{where}.claim_delay", run.claim_delay)
        _probability(f"{where}.fail", run.fail)
        _probability(f"{where}.claim_fail", run.claim_fail)
        if not run.fail_reasons:
            raise ScenarioError(f"{where}.fail_reasons", "list at least one reason")
    jobs = [m.name for m in spec.members if m.kind == "job"]
    if not jobs and doc.lifetime is None:
        raise ScenarioError(f"{path}.lifetime", "a group of services only needs a lifetime")


def _check_faults(faults: FaultsDoc) -> None:
    if faults.node_loss is not None:
        _count("faults.node_loss.count", faults.node_loss.count, MAX_FAULTS)
        _dist("faults.node_loss.at", faults.node_loss.at)
        _dist("faults.node_loss.down_for", faults.node_loss.down_for)
    if faults.controller_crash is not None:
        _count("faults.controller_crash.count", faults.controller_crash.count, MAX_FAULTS)
        _dist("faults.controller_crash.at", faults.controller_crash.at)
        _dist("faults.controller_crash.down_for", faults.controller_crash.down_for)


def _check_outside(doc: OutsideLoadDoc) -> None:
    path = "outside_load"
    if not 0.0 <= doc.utilization <= 1.0:
        raise ScenarioError(
            f"{path}.utilization", f"must be between 0 and 1 (got {doc.utilization})"
        )
    _probability(f"{path}.race", doc.race)
    if not doc.gpus or any(g <= 0 for g in doc.gpus):
        raise ScenarioError(f"{path}.gpus", "list at least one positive GPU count")
    _dist(f"{path}.runtime", doc.runtime)
    if doc.runtime.mean_ns() <= 0:
        raise ScenarioError(f"{path}.runtime", "must have a mean longer than 0s")


def _decode(data: bytes) -> ScenarioDoc:
    try:
        return msgspec.toml.decode(data, type=ScenarioDoc)
    except msgspec.ValidationError as error:
        match = _AT.match(str(error))
        where, reason = (match["path"].lstrip("."), match["reason"]) if match else ("", str(error))
        if unknown := re.match(r"^Object contains unknown field `(.*)`$", reason):
            raise ScenarioError(f"{where}.{unknown[1]}".lstrip("."), "unknown field") from None
        if missing := re.match(r"^Object missing required field `(.*)`$", reason):
            path = f"{where}.{missing[1]}".lstrip(".")
            raise ScenarioError(path, "missing required field") from None
        raise ScenarioError(where, reason) from None
    except msgspec.DecodeError as error:
        raise ScenarioError("", f"not valid TOML: {error}") from None


def parse_scenario(data: bytes | str, base: Path) -> Scenario:
    """Decode and check a scenario; files it names are relative to ``base``."""
    doc = _decode(data.encode() if isinstance(data, str) else data)
    if not _NAME.fullmatch(doc.name):
        raise ScenarioError("name", f"bad name {doc.name!r}")
    _duration("session_interval", doc.session_interval, positive=True)
    _duration("horizon", doc.horizon, positive=True)
    _duration("task_skew", doc.task_skew)
    _count("snapshot_every", doc.snapshot_every, 10_000_000)
    if not doc.workloads:
        raise ScenarioError("workloads", "a scenario needs at least one workload")
    specs = []
    seen: dict[str, int] = {}
    for i, workload in enumerate(doc.workloads):
        path = f"workloads[{i}]"
        if workload.name in seen:
            raise ScenarioError(
                f"{path}.name", f"duplicate workload (also workloads[{seen[workload.name]}])"
            )
        seen[workload.name] = i
        if not _NAME.fullmatch(workload.name):
            raise ScenarioError(
                f"{path}.name", f"bad name {workload.name!r}: 1-47 of a-z, 0-9 and '-'"
            )
        spec = _spec(path, workload, base)
        _check_workload(path, workload, spec)
        specs.append(spec)
    _check_faults(doc.faults)
    _check_outside(doc.outside_load)
    cluster_path = base / doc.cluster
    if not cluster_path.is_file():
        raise ScenarioError("cluster", f"no such cluster file {doc.cluster!r}")
    try:
        cluster = load_cluster(cluster_path)
    except ClusterError as error:
        raise ScenarioError(f"cluster: {error.path}", error.reason) from None
    return Scenario(doc=doc, cluster=cluster, specs=tuple(specs))


def load_scenario(path: str | Path) -> Scenario:
    """Read and check a scenario file."""
    file = Path(path)
    scenario = parse_scenario(read_named_file(file, "scenario file"), file.resolve().parent)
    return msgspec.structs.replace(scenario, path=file.name)
