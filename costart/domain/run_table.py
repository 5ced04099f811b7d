"""A member's optional ``run`` table: how a node agent runs each of its tasks (docs/design.md §9).

```toml
[members.run]
argv = ["python3", "rollout.py", "--port", "9100"]   # the program (no shell)
env = { LOG_LEVEL = "info" }           # added to the agent's environment (no COSTART_*)
env_secrets = { API_KEY = "team-a/openai" }  # values the node reads from its secrets source
cwd = "scenarios/live"                 # relative to the agent's work root (no "..")
grace = "10s"                          # SIGTERM, then SIGKILL after this (default 10s)
port = 9100                            # task i serves on port + i (peers learn it)
log_dir = "costart-logs"               # each task's output: log_dir/GROUP-ID/MEMBER/I.attempt-A.log
                                       #   (relative to the work root, no "..")
[members.run.slurm]                    # how `costart slurm` submits it (`costart.domain.slurm_table`)
partition = "gpu"
[members.run.probes.weights]           # one probe per claim: the claim is READY when it passes
file = "data/weights.bin"              # exactly one of: exec = [argv], http = "URL" (2xx),
period = "1s"                          #   tcp = "host:port", file = "path" (in the task's directory)
timeout = "2s"
fail_after = 0                         # consecutive failures that report the claim FAILED (0: never)
```

The controller validates and stores the table and never executes it: `costart agent`
does. A claim is a resource that must be ready *before* the start; a member's own service
readiness is the application's rendezvous after it. So a probe may not name a port that
any member of the group serves on (``port`` .. ``port + count - 1``): none of them serves
before the barrier, so such a probe could only hold the barrier until it times out.
Nor may it name a link-local or cloud metadata address (`costart.domain.probe_hosts`).
Durations must be longer than 0s. Every failure is a `SpecError` naming the field.
"""

from __future__ import annotations

import re
from typing import Annotated, Final, Literal
from urllib.parse import urlsplit

import msgspec
from msgspec import Meta

from costart.domain.durations import parse_duration_ns
from costart.domain.errors import SpecError
from costart.domain.limits import ENV_NAME_PATTERN
from costart.domain.probe_hosts import never_probed
from costart.domain.slurm_table import SlurmDoc, SlurmSpec, slurm_spec

ProbeKind = Literal["exec", "http", "tcp", "file"]
PROBE_KINDS: Final = ("exec", "http", "tcp", "file")
DEFAULT_GRACE: Final = "10s"
DEFAULT_PERIOD: Final = "1s"
DEFAULT_PROBE_TIMEOUT: Final = "1s"
DEFAULT_LOG_DIR: Final = "costart-logs"
MAX_ARGV: Final = 256
MAX_ARG_CHARS: Final = 4096
MAX_ENV: Final = 128
MAX_PATH_CHARS: Final = 1024
MAX_FAIL_AFTER: Final = 1000
MAX_PORT: Final = 65535
MAX_DURATION_NS: Final = 24 * 3600 * 10**9  # a day: longer is a mistake, not a probe
RESERVED_ENV_PREFIX: Final = "COSTART_"
_ENV_NAME = re.compile(ENV_NAME_PATTERN)
MAX_SECRET_REF: Final = 256
_SECRET_REF = re.compile(r"[A-Za-z0-9._-]{1,128}(/[A-Za-z0-9._-]{1,128}){0,7}")
_TCP = re.compile(r"(?P<host>[A-Za-z0-9._-]{1,253}|\[[0-9A-Fa-f:.]{2,45}\]):(?P<port>[0-9]{1,5})")


class Probe(msgspec.Struct, frozen=True, gc=False, omit_defaults=True):
    """The check that makes claim ``claim`` READY. ``argv`` for ``exec``; ``target`` is
    the URL (``http``), ``host:port`` (``tcp``) or path (``file``)."""

    claim: Annotated[str, Meta(description="the claim the probe makes READY")]
    kind: Annotated[ProbeKind, Meta(description="exec, http (a 2xx answer), tcp or file")]
    period_ns: Annotated[int, Meta(description="nanoseconds between checks")]
    timeout_ns: Annotated[int, Meta(description="nanoseconds one check may take")]
    argv: Annotated[tuple[str, ...], Meta(description="the command of an exec probe")] = ()
    target: Annotated[str, Meta(description="the URL (http), host:port (tcp) or path (file)")] = ""
    fail_after: Annotated[
        int, Meta(description="consecutive misses that report the claim FAILED (0: never)")
    ] = 0


class RunSpec(msgspec.Struct, frozen=True, gc=False, omit_defaults=True):
    """How each task of a member runs; defaults are filled in, probes sorted by claim
    and env by name (stored canonically in `GroupSubmitted`)."""

    argv: Annotated[tuple[str, ...], Meta(description="the program and its arguments")]
    grace_ns: Annotated[int, Meta(description="nanoseconds from SIGTERM to SIGKILL on a stop")]
    log_dir: Annotated[str, Meta(description="where each task's output goes, on its node")]
    env: Annotated[
        tuple[tuple[str, str], ...], Meta(description="environment variables, sorted by name")
    ] = ()
    cwd: Annotated[str | None, Meta(description="the working directory (null: the agent's)")] = None
    port: Annotated[int | None, Meta(description="task i serves on port + i (null: no port)")] = (
        None
    )
    probes: Annotated[
        tuple[Probe, ...], Meta(description="one probe per probed claim, sorted by claim")
    ] = ()
    secrets: Annotated[
        tuple[tuple[str, str], ...],
        Meta(
            description="environment variables whose values the node reads from its "
            "secrets source: (name, secret reference), sorted by name; only the "
            "references are stored"
        ),
    ] = ()
    slurm: Annotated[
        SlurmSpec | None,
        Meta(description="how `costart slurm` submits each task (null: its defaults)"),
    ] = None
    # Never true in the log (a spec cannot set it; omitted at its default): only a copy
    # made for a reader who may not see the values carries it (`costart.rest.env_values`).
    env_withheld: Annotated[
        bool,
        Meta(
            description="true when the env values were withheld from this reader: each "
            'is "(hidden)", the names are true (the group\'s owner and admins see the '
            "values, and in member rows the agents of the nodes its tasks are placed on)"
        ),
    ] = False

    def probe(self, claim: str) -> Probe | None:
        for probe in self.probes:
            if probe.claim == claim:
                return probe
        return None

    def ports(self, count: int) -> range:
        """The ports the member's tasks serve on (empty without ``port``)."""
        return range(0) if self.port is None else range(self.port, self.port + count)


def task_log_path(
    run: RunSpec, group: str, group_id: str, member: str, task: int, attempt: int
) -> str:
    """Where the agent writes a task's output (on the task's node; a relative
    ``log_dir`` is under the agent's working directory). One file per task and attempt,
    so a relaunch never overwrites what the failed run printed."""
    return f"{run.log_dir}/{group}-{group_id}/{member}/{task}.attempt-{attempt}.log"


# --- the document, as a user writes it ---------------------------------------------------


class ProbeDoc(msgspec.Struct, forbid_unknown_fields=True):
    exec: list[str] | None = None
    http: str | None = None
    tcp: str | None = None
    file: str | None = None
    period: str = DEFAULT_PERIOD
    timeout: str = DEFAULT_PROBE_TIMEOUT
    fail_after: int = 0


class RunDoc(msgspec.Struct, forbid_unknown_fields=True):
    argv: list[str]
    env: dict[str, str] = msgspec.field(default_factory=dict)
    cwd: str | None = None
    grace: str = DEFAULT_GRACE
    port: int | None = None
    log_dir: str = DEFAULT_LOG_DIR
    probes: dict[str, ProbeDoc] = msgspec.field(default_factory=dict)
    env_secrets: dict[str, str] = msgspec.field(default_factory=dict)
    slurm: SlurmDoc | None = None


def run_spec(path: str, doc: RunDoc, claims: tuple[str, ...], count: int) -> RunSpec:
    """Validate a member's run table (``claims``: every claim of the member, member and
    task claims; ``count``: its tasks or replicas). Probe ports are checked against the
    whole group by `check_probe_ports` once every member is known."""
    _argv(f"{path}.argv", doc.argv)
    env = _env(f"{path}.env", doc.env)
    secrets = _secrets(f"{path}.env_secrets", doc.env_secrets, doc.env)
    if doc.cwd is not None:
        _beneath(f"{path}.cwd", doc.cwd, "the agent's work root")
    _beneath(f"{path}.log_dir", doc.log_dir, "the agent's work root")
    if doc.port is not None:
        if not 1 <= doc.port <= MAX_PORT:
            raise SpecError(f"{path}.port", f"must be between 1 and {MAX_PORT} (got {doc.port})")
        if doc.port + count - 1 > MAX_PORT:
            raise SpecError(
                f"{path}.port",
                f"{count} tasks from port {doc.port} would pass {MAX_PORT}",
            )
    probes = []
    for claim in sorted(doc.probes):
        where = f"{path}.probes.{claim}"
        if claim not in claims:
            known = ", ".join(claims) if claims else "none"
            raise SpecError(where, f"{claim!r} is not a claim of this member (claims: {known})")
        probes.append(_probe(where, claim, doc.probes[claim]))
    return RunSpec(
        argv=tuple(doc.argv),
        grace_ns=_positive(f"{path}.grace", doc.grace),
        log_dir=doc.log_dir,
        env=env,
        cwd=doc.cwd,
        port=doc.port,
        probes=tuple(probes),
        secrets=secrets,
        slurm=slurm_spec(f"{path}.slurm", doc.slurm) if doc.slurm is not None else None,
    )


def check_probe_ports(runs: list[tuple[str, RunSpec | None, int]]) -> None:
    """Refuse overlapping member ports and any probe that names a member's port
    (``runs``: each member's path, run table and count, in spec order)."""
    served: list[tuple[range, str]] = []
    for path, run, count in runs:
        if run is None:
            continue
        ports = run.ports(count)
        for other, other_path in served:
            if ports and other and ports.start < other.stop and other.start < ports.stop:
                raise SpecError(
                    f"{path}.port",
                    f"ports {ports.start}-{ports.stop - 1} overlap {other_path}.port "
                    f"({other.start}-{other.stop - 1})",
                )
        if ports:
            served.append((ports, path))
    for path, run, _count in runs:
        if run is None:
            continue
        for probe in run.probes:
            port = probe_port(probe)
            for ports, owner in served:
                if port is not None and port in ports:
                    whose = "the member's own" if owner == path else f"{owner}'s"
                    raise SpecError(
                        f"{path}.probes.{probe.claim}",
                        f"port {port} is {whose} endpoint: a claim is a resource ready "
                        "before the start, and no member serves before it (a member's "
                        "readiness is its application's rendezvous after the start)",
                    )


def probe_port(probe: Probe) -> int | None:
    """The port an ``http`` or ``tcp`` probe connects to."""
    if probe.kind == "tcp":
        match = _TCP.fullmatch(probe.target)
        return int(match["port"]) if match else None
    if probe.kind == "http":
        url = urlsplit(probe.target)
        return url.port or (443 if url.scheme == "https" else 80)
    return None


def _probe(path: str, claim: str, doc: ProbeDoc) -> Probe:
    given = [k for k in PROBE_KINDS if getattr(doc, k) is not None]
    if len(given) != 1:
        what = "none" if not given else " and ".join(given)
        raise SpecError(path, f"set exactly one of exec, http, tcp, file (got {what})")
    kind: ProbeKind = given[0]  # type: ignore[assignment]
    period_ns = _positive(f"{path}.period", doc.period)
    timeout_ns = _positive(f"{path}.timeout", doc.timeout)
    if not 0 <= doc.fail_after <= MAX_FAIL_AFTER:
        raise SpecError(
            f"{path}.fail_after", f"must be between 0 and {MAX_FAIL_AFTER} (got {doc.fail_after})"
        )
    argv: tuple[str, ...] = ()
    target = ""
    if doc.exec is not None:
        _argv(f"{path}.exec", doc.exec)
        argv = tuple(doc.exec)
    elif doc.http is not None:
        target = _url(f"{path}.http", doc.http)
    elif doc.tcp is not None:
        target = _address(f"{path}.tcp", doc.tcp)
    elif doc.file is not None:
        target = _beneath(f"{path}.file", doc.file, "the task's directory")
    return Probe(
        claim=claim,
        kind=kind,
        period_ns=period_ns,
        timeout_ns=timeout_ns,
        argv=argv,
        target=target,
        fail_after=doc.fail_after,
    )


def _positive(path: str, text: str) -> int:
    try:
        ns = parse_duration_ns(text)
    except ValueError as error:
        raise SpecError(path, str(error)) from None
    if ns <= 0:
        raise SpecError(path, f"{text!r}: must be longer than 0s")
    if ns > MAX_DURATION_NS:
        raise SpecError(path, f"{text!r} exceeds the limit of 24h")
    return ns


def _text(path: str, text: str, limit: int) -> str:
    if not text:
        raise SpecError(path, "empty")
    if len(text) > limit:
        raise SpecError(path, f"longer than {limit} characters")
    if not text.isprintable():  # NUL too: every control character is unprintable
        raise SpecError(path, f"control character in {text!r}")
    return text


def _beneath(path: str, text: str, root: str) -> str:
    """A relative path that stays inside ``root`` by its spelling alone: no leading
    ``/``, no ``..`` part (the node also refuses symlinks on the way, ADR 0066)."""
    _text(path, text, MAX_PATH_CHARS)
    if text.startswith("/"):
        raise SpecError(path, f"{text!r} is absolute: give a path relative to {root}")
    if ".." in text.split("/"):
        raise SpecError(path, f"{text!r} leaves {root} ('..')")
    return text


def _argv(path: str, argv: list[str]) -> None:
    if not argv:
        raise SpecError(path, "empty: name the program to run")
    if len(argv) > MAX_ARGV:
        raise SpecError(path, f"{len(argv)} arguments; the limit is {MAX_ARGV}")
    for i, arg in enumerate(argv):
        if i == 0 or arg:
            _text(f"{path}[{i}]", arg, MAX_ARG_CHARS)


def _env_name(path: str, name: str) -> None:
    if not _ENV_NAME.fullmatch(name):
        raise SpecError(path, "bad variable name: letters, digits and _")
    if name.startswith(RESERVED_ENV_PREFIX):
        raise SpecError(path, f"{RESERVED_ENV_PREFIX}* is the agent's (the task's identity)")


def _env(path: str, env: dict[str, str]) -> tuple[tuple[str, str], ...]:
    if len(env) > MAX_ENV:
        raise SpecError(path, f"{len(env)} variables; the limit is {MAX_ENV}")
    for name in sorted(env):
        _env_name(f"{path}.{name}", name)
        value = env[name]
        if len(value) > MAX_ARG_CHARS or "\x00" in value:
            raise SpecError(f"{path}.{name}", f"longer than {MAX_ARG_CHARS} characters or a NUL")
    return tuple(sorted(env.items()))


def _secrets(
    path: str, secrets: dict[str, str], env: dict[str, str]
) -> tuple[tuple[str, str], ...]:
    """Each name an environment variable's (as in ``env``, which may not set it too),
    each reference a relative path of ``/``-separated parts (``team-a/openai``)."""
    if len(secrets) + len(env) > MAX_ENV:
        raise SpecError(
            path, f"{len(secrets)} secrets and {len(env)} variables; the limit is {MAX_ENV}"
        )
    for name in sorted(secrets):
        _env_name(f"{path}.{name}", name)
        if name in env:
            raise SpecError(f"{path}.{name}", "also set in env: name a variable in one of them")
        reference = secrets[name]
        if (
            len(reference) > MAX_SECRET_REF
            or not _SECRET_REF.fullmatch(reference)
            or any(part in (".", "..") for part in reference.split("/"))
        ):
            raise SpecError(
                f"{path}.{name}",
                f"bad secret reference {reference!r}: parts of letters, digits, '.', '_' "
                f"and '-' separated by '/' (no '.' or '..' part; at most {MAX_SECRET_REF} "
                "characters)",
            )
    return tuple(sorted(secrets.items()))


def _url(path: str, text: str) -> str:
    _text(path, text, MAX_PATH_CHARS)
    try:
        url = urlsplit(text)
        port = url.port
    except ValueError as error:
        raise SpecError(path, f"bad URL {text!r}: {error}") from None
    if url.scheme not in ("http", "https") or not url.hostname:
        raise SpecError(path, f"bad URL {text!r}: expected http://HOST[:PORT]/PATH or https://")
    if port == 0:
        raise SpecError(path, f"bad URL {text!r}: port 0")
    _reachable(path, url.hostname)
    return text


def _address(path: str, text: str) -> str:
    match = _TCP.fullmatch(text)
    if match is None:
        raise SpecError(path, f"bad address {text!r}: expected HOST:PORT")
    if not 1 <= int(match["port"]) <= MAX_PORT:
        raise SpecError(path, f"bad address {text!r}: port must be between 1 and {MAX_PORT}")
    _reachable(path, match["host"])
    return text


def _reachable(path: str, host: str) -> None:
    """Refuse a host no probe may reach (`costart.domain.probe_hosts`); the agent checks
    again on the resolved address, so a name that only resolves to one is its to refuse."""
    why = never_probed(host)
    if why is not None:
        raise SpecError(
            path,
            f"{host!r} is {why}: no probe may reach link-local or cloud metadata addresses",
        )
