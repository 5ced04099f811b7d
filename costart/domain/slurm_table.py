"""A member's optional ``slurm`` table, inside its run table: how `costart slurm`
submits each of its tasks (ADR 0119). The controller validates and stores it and never
acts on it; the domain knows no Slurm beyond these words.

```toml
[members.run.slurm]
partition = "gpu"                 # sbatch --partition (unset: the adapter's --partition)
account = "physics"               # sbatch --account: whom Slurm's accounting bills
qos = "high"                      # sbatch --qos
options = ["--comment=exp-42", "--nice=10"]   # more sbatch options, from an allow-list
```

Every value is matched whole (`re.fullmatch`), never passed through a shell: an option
is one ``--name=value`` (or a bare ``--name``) whose name is on `ALLOWED_OPTIONS` and
whose value matches that option's pattern. What the adapter itself decides (the node,
the shape, the account the job runs as, the hold, the job's name and output, its time
limit) is never an option here. Slurm's time limit is the member's ``max_runtime`` plus
its run table's ``grace`` (`time_limit_ns`, filled in by the parser): costart's own
limit fires first, Slurm's is the backstop.
"""

from __future__ import annotations

import re
from typing import Annotated, Final

import msgspec
from msgspec import Meta

from costart.domain.errors import SpecError

NAME_PATTERN: Final = r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}"
MAX_OPTIONS: Final = 16
_NAME: Final = re.compile(NAME_PATTERN)
_MAIL_TYPE: Final = r"NONE|BEGIN|END|FAIL|REQUEUE|ALL|TIME_LIMIT(?:_50|_80|_90)?|ARRAY_TASKS"
ALLOWED_OPTIONS: Final[dict[str, str]] = {
    # name: the pattern its value matches whole (empty: a flag that takes no value)
    "comment": r"[A-Za-z0-9_.:,@+/-]{1,128}",
    "licenses": r"[A-Za-z0-9_.-]{1,64}(?::\d{1,6})?(?:,[A-Za-z0-9_.-]{1,64}(?::\d{1,6})?){0,15}",
    "mail-type": rf"(?:{_MAIL_TYPE})(?:,(?:{_MAIL_TYPE})){{0,9}}",
    "mail-user": r"[A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9.-]{1,253}",
    "nice": r"\d{1,7}",
    "reservation": NAME_PATTERN,
    "signal": r"(?:[BR]:)?(?:SIG)?[A-Z0-9]{1,8}(?:@\d{1,5})?",
    "tmp": r"\d{1,9}[KMGT]?",
    "wckey": NAME_PATTERN,
}
_OPTION: Final = re.compile(r"--(?P<name>[a-z][a-z-]{0,31})(?:=(?P<value>.*))?", re.DOTALL)


class SlurmSpec(msgspec.Struct, frozen=True, gc=False, omit_defaults=True):
    """How `costart slurm` submits the member's tasks (stored canonically)."""

    partition: Annotated[
        str | None, Meta(description="sbatch --partition (null: the adapter's)")
    ] = None
    account: Annotated[str | None, Meta(description="sbatch --account (Slurm's billing)")] = None
    qos: Annotated[str | None, Meta(description="sbatch --qos")] = None
    options: Annotated[
        tuple[str, ...],
        Meta(description="more sbatch options, each --name=value from an allow-list"),
    ] = ()
    time_limit_ns: Annotated[
        int | None,
        Meta(
            description="Slurm's time limit: the member's max_runtime plus its grace (null: "
            "no max_runtime); never set by the spec"
        ),
    ] = None


class SlurmDoc(msgspec.Struct, forbid_unknown_fields=True):
    partition: str | None = None
    account: str | None = None
    qos: str | None = None
    options: list[str] = msgspec.field(default_factory=list)


def _name(path: str, text: str | None) -> str | None:
    if text is not None and not _NAME.fullmatch(text):
        raise SpecError(path, f"{text!r}: 1-64 of letters, digits, '_', '.' and '-'")
    return text


def _option(path: str, text: str) -> str:
    match = _OPTION.fullmatch(text)
    if match is None:
        raise SpecError(path, f"{text!r}: expected one sbatch option, --NAME=VALUE")
    name, value = match["name"], match["value"]
    if name not in ALLOWED_OPTIONS:
        allowed = ", ".join(f"--{n}" for n in sorted(ALLOWED_OPTIONS))
        raise SpecError(
            path,
            f"--{name} is not an option a spec may set (allowed: {allowed}; partition, "
            "account and qos have their own fields, and the node, shape, account the job "
            "runs as, hold, name, output and time limit are costart's)",
        )
    pattern = ALLOWED_OPTIONS[name]
    if value is None or not re.fullmatch(pattern, value):
        raise SpecError(path, f"{text!r}: the value of --{name} must match {pattern}")
    return text


def slurm_spec(path: str, doc: SlurmDoc) -> SlurmSpec:
    """Validate a member's ``slurm`` table (every failure a `SpecError` naming the field)."""
    if len(doc.options) > MAX_OPTIONS:
        raise SpecError(
            f"{path}.options", f"{len(doc.options)} options; the limit is {MAX_OPTIONS}"
        )
    options = tuple(_option(f"{path}.options[{i}]", text) for i, text in enumerate(doc.options))
    names = [o.split("=", 1)[0] for o in options]
    for i, name in enumerate(names):
        if name in names[:i]:
            raise SpecError(f"{path}.options[{i}]", f"{name} is given twice")
    return SlurmSpec(
        partition=_name(f"{path}.partition", doc.partition),
        account=_name(f"{path}.account", doc.account),
        qos=_name(f"{path}.qos", doc.qos),
        options=options,
    )
