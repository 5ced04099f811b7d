"""Run lengths learned from the log's own history, and the estimates made of them (ADR
0111, ADR 0112).

Runs are grouped by *key*: the group's owner, its workload and the member's name. The
workload is the group's ``costart.io/workload`` label when it has one, else its name
without a trailing instance number (``train-0042`` and ``train-0043`` are one workload,
``train``). A sample is the length of one member run that *succeeded*, from its start to
its end: a run stopped by preemption, a cancel, its group's end or a lost node, and a run
that failed, say nothing about how long the work takes (Tsafrir, Etsion and Feitelson,
IEEE TPDS 2007, learn from a user's completed jobs the same way).

Bounded: the newest `SAMPLES_PER_KEY` samples of a key, and at most `MAX_KEYS` keys; a
new key beyond that evicts the key that learned least recently. Recency is the history's
own count of samples (``used``), never the clock or hash order, so the eviction is the
same in every replay and after every restore. In memory the keys are kept in recency
order (a key that learns moves to the end, the first is evicted); decoding (which sorts
keys) puts them back in that order by ``used``.

Pure and deterministic: every answer is a function of the samples folded.
"""

from __future__ import annotations

import re
from itertools import pairwise
from typing import Final

import msgspec

from costart.domain.spec_types import GroupSpec, MemberSpec

SAMPLES_PER_KEY: Final = 20
"""The newest samples a key keeps."""
MAX_KEYS: Final = 4096
"""The keys the history keeps; a new one beyond evicts the least recently learning."""
PERCENTILE: Final = 80
"""The estimate is this nearest-rank percentile of a key's samples."""
MIN_SAMPLES: Final = 3
"""Fewer samples than this make no estimate (the runtime stays unknown)."""

WORKLOAD_LABEL: Final = "costart.io/workload"
"""The group label that names its workload outright."""

_INSTANCE_SUFFIX: Final = re.compile(r"(?P<base>.+?)(?:-[0-9]+)+")
"""A name ending in ``-<digits>`` (once or more): an instance of the workload before."""


def workload_of(group: GroupSpec) -> str:
    """The workload a group is a run of: its ``costart.io/workload`` label, else its name
    without its trailing ``-<digits>`` parts (``train-7-2`` is ``train``)."""
    for key, value in group.labels:
        if key == WORKLOAD_LABEL:
            return value
    match = _INSTANCE_SUFFIX.fullmatch(group.name)
    return group.name if match is None else match["base"]


def runtime_key(group: GroupSpec, member: MemberSpec) -> str:
    """The key a member's runs are learned under: owner, workload and member name,
    separated by spaces (none of the three may hold one)."""
    return f"{group.owner} {workload_of(group)} {member.name}"


def nearest_rank(samples: list[int], percentile: int) -> int:
    """The nearest-rank ``percentile`` of ``samples`` (not empty): the smallest sample
    at least ``percentile`` percent of the samples are at most."""
    ordered = sorted(samples)
    rank = max(1, -(-percentile * len(ordered) // 100))
    return ordered[rank - 1]


def slipped_runtime(samples: list[int], elapsed_ns: int) -> int:
    """How long a run that has run ``elapsed_ns``, past its estimate, is now expected to
    last: the smallest sample longer than it has run, else twice what it has run (one
    nanosecond more at the least), so the expected end is always ahead."""
    longer = [sample for sample in samples if sample > elapsed_ns]
    if longer:
        return min(longer)
    return max(2 * elapsed_ns, elapsed_ns + 1)


class RuntimeSamples(msgspec.Struct, array_like=True, gc=False):
    """One key's samples (oldest first) and when it last learned (``used``: the
    history's sample count then)."""

    used: int
    samples: list[int]


class RuntimeHistory(msgspec.Struct, kw_only=True):
    """The run lengths learned so far, per key (see the module). ``learned`` counts
    every sample ever folded: it orders keys by recency."""

    learned: int = 0
    keys: dict[str, RuntimeSamples] = msgspec.field(default_factory=dict)

    def __post_init__(self) -> None:
        # Decoding yields the keys sorted by text; eviction needs them by recency.
        keys = self.keys
        if any(a.used > b.used for a, b in pairwise(keys.values())):
            self.keys = dict(sorted(keys.items(), key=lambda item: item[1].used))

    def learn(self, key: str, runtime_ns: int) -> None:
        """Add one run's length to ``key`` (a negative one, which a sound log never
        holds, is not a run length and is ignored)."""
        if runtime_ns < 0:
            return
        self.learned = learned = self.learned + 1
        keys = self.keys
        entry = keys.pop(key, None)
        if entry is None:
            if len(keys) >= MAX_KEYS:
                del keys[next(iter(keys))]
            entry = RuntimeSamples(used=learned, samples=[runtime_ns])
        else:
            entry.used = learned
            samples = entry.samples
            samples.append(runtime_ns)
            if len(samples) > SAMPLES_PER_KEY:
                del samples[0]
        keys[key] = entry

    def samples(self, key: str) -> list[int]:
        """``key``'s samples, oldest first (empty: none)."""
        entry = self.keys.get(key)
        return [] if entry is None else list(entry.samples)

    def estimate(self, key: str) -> int | None:
        """The estimated run length of ``key`` (None: fewer than `MIN_SAMPLES`)."""
        entry = self.keys.get(key)
        if entry is None or len(entry.samples) < MIN_SAMPLES:
            return None
        return nearest_rank(entry.samples, PERCENTILE)
