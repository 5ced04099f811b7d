"""A gang's expected runtime: its longest member's, on the weakest basis among them.

A gang holds its capacity until its last member ends, so its plan uses the longest
member's expected runtime; one member without a known runtime makes the whole gang's
unknown. The basis is the weakest any member's answer rests on (an estimate is weaker
than a limit)."""

from __future__ import annotations

from collections.abc import Callable

from costart.domain import expected_runtime as runtimes
from costart.domain.runtime_history import RuntimeHistory
from costart.domain.spec_types import GroupSpec, MemberSpec

RuntimeOf = Callable[[GroupSpec, MemberSpec], runtimes.ExpectedRuntime]
"""A member's run length if it started now (`LearnedRuntimes.runtime`)."""

_STRENGTH: dict[runtimes.Basis, int] = {"limit": 0, "estimate": 1, "unknown": 2}


def weakest(a: runtimes.Basis, b: runtimes.Basis) -> runtimes.Basis:
    """The weaker of two bases (limit < estimate < unknown)."""
    return a if _STRENGTH[a] >= _STRENGTH[b] else b


def gang_runtime(
    spec: GroupSpec, history: RuntimeHistory | None = None, runtime_of: RuntimeOf | None = None
) -> runtimes.ExpectedRuntime:
    """The group's expected runtime if its gang started now (``history``: the World's
    learned runtimes, for members that declare no limit; ``runtime_of``, when given,
    answers each member's instead)."""
    longest = 0
    basis: runtimes.Basis = "limit"
    for member in spec.members:
        runtime = (
            runtimes.expected_runtime(spec, member, history)
            if runtime_of is None
            else runtime_of(spec, member)
        )
        if runtime.runtime_ns is None:
            return runtimes.UNKNOWN_RUNTIME
        longest = max(longest, runtime.runtime_ns)
        basis = weakest(basis, runtime.basis)
    return runtimes.ExpectedRuntime(longest, basis)
