"""Slurm's one-line records (``scontrol show node -o``, ``scontrol show job -o``) and
its TRES and memory notations, read whole or refused with the line named.

A record is ``Key=value`` pairs separated by spaces; a value may itself hold spaces
(``OS=Linux 6.1 #1 SMP``), so a pair ends where the next ``Key=`` begins. Values that
could hold ``" Key="`` (a job's command line, its comment) are never trusted for
identity: costart's identity is in the job's name, which holds no space.
"""

from __future__ import annotations

import math
import re
from typing import Final

from costart.domain.capacity import Capacity

_KEY: Final = re.compile(r"(?:^| )([A-Za-z][A-Za-z0-9_/:]*)=")
_MEM: Final = re.compile(r"(\d+(?:\.\d+)?)([KMGTP]?)")
_MB_PER: Final = {"K": 1 / 1024, "": 1, "M": 1, "G": 1024, "T": 1024**2, "P": 1024**3}


class SlurmOutputError(ValueError):
    """Slurm printed something this adapter cannot read for sure (names what and where)."""


def parse_record(line: str, what: str) -> dict[str, str]:
    """One ``Key=value ...`` line as a dict (values stripped); `SlurmOutputError` if
    the line does not start with a key or names a key twice."""
    text = line.strip()
    keys = list(_KEY.finditer(text))
    if not keys or keys[0].start() != 0:
        raise SlurmOutputError(f"{what}: not a Key=value record: {text[:80]!r}")
    found: dict[str, str] = {}
    for i, match in enumerate(keys):
        end = keys[i + 1].start() if i + 1 < len(keys) else len(text)
        key = match.group(1)
        if key in found:
            raise SlurmOutputError(f"{what}: key {key} twice in {text[:80]!r}")
        found[key] = text[match.end() : end].strip()
    return found


def parse_records(text: str, what: str) -> list[dict[str, str]]:
    """Every non-empty line of ``text`` as a record (``No jobs in the system``: none)."""
    lines = [line for line in text.splitlines() if line.strip()]
    if len(lines) == 1 and lines[0].strip().startswith("No ") and "=" not in lines[0]:
        return []
    return [parse_record(line, f"{what} line {n}") for n, line in enumerate(lines, 1)]


def need(record: dict[str, str], key: str, what: str) -> str:
    """``record[key]``, or `SlurmOutputError` naming the missing key."""
    try:
        return record[key]
    except KeyError:
        raise SlurmOutputError(f"{what}: no {key}= field") from None


def mem_mb(text: str, what: str) -> float:
    """Slurm memory (``3000M``, ``1G``, ``32000`` in MB) in megabytes."""
    match = _MEM.fullmatch(text)
    if match is None:
        raise SlurmOutputError(f"{what}: {text!r} is not an amount of memory")
    return float(match.group(1)) * _MB_PER[match.group(2)]


def whole_gb(mb: float, *, up: bool) -> int:
    """Megabytes in whole gigabytes: rounded up for what is used (never counted as
    free when it is not), down for what a node offers."""
    gb = mb / 1024
    return math.ceil(gb - 1e-9) if up else math.floor(gb + 1e-9)


def parse_tres(text: str, what: str) -> Capacity:
    """A TRES list (``cpu=3,mem=3000M,node=1,billing=3,gres/gpu=2``) as the capacity it
    uses (memory rounded up). Typed GPUs (``gres/gpu:a100=2``) count as GPUs once: the
    untyped total is used when both appear."""
    if text in ("", "(null)"):
        return Capacity()
    cpu = 0
    mem = 0.0
    gpu_total: int | None = None
    gpu_typed = 0
    for part in text.split(","):
        key, sep, value = part.partition("=")
        if not sep:
            raise SlurmOutputError(f"{what}: {part!r} in TRES {text!r} is not key=value")
        if key == "cpu":
            cpu = _count(value, what)
        elif key == "mem":
            mem = mem_mb(value, what)
        elif key == "gres/gpu":
            gpu_total = _count(value, what)
        elif key.startswith("gres/gpu:"):
            gpu_typed += _count(value, what)
    gpu = gpu_total if gpu_total is not None else gpu_typed
    return Capacity(gpu=gpu, cpu=cpu, mem_gb=whole_gb(mem, up=True))


def _count(value: str, what: str) -> int:
    if not re.fullmatch(r"\d{1,9}", value):
        raise SlurmOutputError(f"{what}: {value!r} is not a count")
    return int(value)
