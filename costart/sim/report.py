"""The comparison report: a JSON document and a PNG plot (matplotlib, Agg backend).

The JSON holds only what the seed determines (no wall-clock times), so two runs with
the same seed write the same bytes. The terminal table lives in the CLI.
"""

from __future__ import annotations

from pathlib import Path

import msgspec

from costart.sim.metrics import Sample
from costart.sim.results import PolicyResult
from costart.sim.setup import SimSetup, describe_setup

MAX_PLOT_POINTS = 4000
_encoder = msgspec.json.Encoder(order="sorted")


class Report(msgspec.Struct, frozen=True):
    """Every policy's figures for one drawn setup, with the options that drew it."""

    scenario: str
    seed: int
    options: list[str]
    assumptions: list[str]
    rejected: list[str]
    policies: list[PolicyResult]


def build_report(setup: SimSetup, results: list[PolicyResult], rejected: list[str]) -> Report:
    return Report(
        scenario=setup.name,
        seed=setup.options.seed,
        options=describe_setup(setup),
        assumptions=list(setup.workload.assumptions),
        rejected=rejected[:100],
        policies=results,
    )


def report_json(report: Report) -> bytes:
    """Canonical JSON (sorted keys), the same bytes for the same seed."""
    return msgspec.json.format(_encoder.encode(report), indent=2) + b"\n"


def _thin(timeline: list[Sample]) -> list[Sample]:
    step = max(1, len(timeline) // MAX_PLOT_POINTS)
    return timeline[::step] + ([timeline[-1]] if timeline and len(timeline) % step else [])


def write_plot(report: Report, capacity_gpus: int, path: Path) -> None:
    """Utilization (busy / capacity GPUs) and queue length over time, one line per policy."""
    import matplotlib  # noqa: PLC0415 - only the report needs it, and it is slow to import

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    figure, (top, bottom) = plt.subplots(2, 1, figsize=(10, 6), sharex=True)
    for result in report.policies:
        points = _thin(result.timeline)
        hours = [p.t_ns / 3.6e12 for p in points]
        top.step(
            hours,
            [p.busy_gpus / max(capacity_gpus, 1) for p in points],
            where="post",
            label=result.policy,
        )
        bottom.step(hours, [p.waiting for p in points], where="post", label=result.policy)
    top.set_ylabel("utilization (busy GPUs)")
    top.set_ylim(0, 1.05)
    top.legend(loc="upper right")
    bottom.set_ylabel("groups waiting to start")
    bottom.set_xlabel("virtual time (hours)")
    figure.suptitle(f"costart sim: {report.scenario} (seed {report.seed})")
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)
