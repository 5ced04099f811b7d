"""Recorded runtime estimates in words: two-unit durations and the basis named."""

from __future__ import annotations

from costart.display.estimates import estimate_text
from costart.domain import RuntimeEstimate

HOUR = 3600 * 10**9


def test_a_limit_an_estimate_and_a_slipped_estimate_in_words() -> None:
    assert estimate_text(RuntimeEstimate(member="w", runtime_ns=2 * HOUR, basis="limit")) == (
        "2h00m (limit)"
    )
    estimate = RuntimeEstimate(
        member="worker",
        runtime_ns=5 * HOUR + 61 * 10**9,
        basis="estimate",
        samples=5,
        percentile=80,
        key="alice train worker",
    )
    assert estimate_text(estimate) == (
        "5h01m (estimate: p80 of 5 runs of owner alice, workload train, member worker)"
    )
    slipped = RuntimeEstimate(
        member="worker",
        runtime_ns=90 * 10**9,
        basis="estimate",
        samples=1,
        percentile=80,
        key="bob@lab pretrain/llama worker",
        slipped=True,
    )
    assert estimate_text(slipped) == (
        "1m30s (estimate, slipped: 1 run of owner bob@lab, workload pretrain/llama, member worker)"
    )
