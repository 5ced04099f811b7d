"""A recorded runtime estimate (`costart.domain.expected_runtime.RuntimeEstimate`) as
people read it: the duration in two units and what it rests on.

- ``2h00m (limit)``
- ``5h00m (estimate: p80 of 5 runs of owner alice, workload train, member worker)``
- ``8h00m (estimate, slipped: 5 runs of owner alice, workload train, member worker)``
"""

from __future__ import annotations

from costart.display.timefmt import duration
from costart.domain import RuntimeEstimate


def _runs_of(record: RuntimeEstimate) -> str:
    runs = f"{record.samples} run{'s' if record.samples != 1 else ''}"
    if record.key is None:
        return runs
    owner, workload, member = record.key.split(" ", 2)
    return f"{runs} of owner {owner}, workload {workload}, member {member}"


def estimate_text(record: RuntimeEstimate) -> str:
    """``record``'s runtime and basis in words (durations in at most two units)."""
    runtime = duration(record.runtime_ns)
    if record.basis == "limit":
        return f"{runtime} (limit)"
    if record.slipped:
        return f"{runtime} (estimate, slipped: {_runs_of(record)})"
    return f"{runtime} (estimate: p{record.percentile} of {_runs_of(record)})"
