"""The comparison of one policy with the peers' models (ADR 0115), on hand-made
summaries: best peer, the 10% margin, dominance, and missing figures."""

from __future__ import annotations

from typing import Any

import pytest

from costart.sim.peer_comparison import (
    Best,
    MissingFigure,
    best_peer,
    dominating_peers,
    median,
    within_margin,
)
from costart.sim.results import PEER_POLICIES

FIELDS = {
    "gang_p99": "gang_time_to_start_p99_s",
    "small_p50": "small_time_to_start_p50_s",
    "wasted": "wasted_gpu_hours",
}


def summary(rows: dict[str, tuple[float | None, float | None, float | None]]) -> dict[str, Any]:
    """{policy: (gang p99, small p50, wasted)} as the benchmark records medians."""
    return {
        policy: {
            FIELDS[f]: {"median": v, "low": v, "high": v}
            for f, v in zip(("gang_p99", "small_p50", "wasted"), values, strict=True)
        }
        for policy, values in rows.items()
    }


PEERS = {
    "volcano": (9000.0, 5.0, 2.0),
    "volcano-sla": (4000.0, 120.0, 130.0),
    "yunikorn": (4100.0, 500.0, 260.0),
    "kueue": (9900.0, 10.0, 50.0),
    "slurm-easy": (5000.0, 6.0, 1.5),
}


def test_the_best_peer_is_the_lowest_median_per_figure() -> None:
    s = summary({**PEERS, "recommended": (4200.0, 5.2, 60.0)})
    assert best_peer(s, "gang_p99") == Best("volcano-sla", 4000.0)
    assert best_peer(s, "small_p50") == Best("volcano", 5.0)
    assert best_peer(s, "wasted") == Best("slurm-easy", 1.5)


def test_a_tie_goes_to_the_first_peer_in_order() -> None:
    s = summary({p: (1.0, 1.0, 1.0) for p in PEER_POLICIES})
    assert best_peer(s, "wasted").peer == PEER_POLICIES[0]


def test_within_ten_percent_of_the_best() -> None:
    assert within_margin(4400.0, 4000.0)  # exactly 110%
    assert not within_margin(4400.1, 4000.0)
    assert within_margin(0.0, 0.0)  # a best of zero asks for zero
    assert not within_margin(0.01, 0.0)
    s = summary({**PEERS, "recommended": (4200.0, 5.2, 60.0)})
    mine = {f: median(s, "recommended", f) for f in FIELDS}
    met = {f: within_margin(mine[f], best_peer(s, f).value) for f in FIELDS}
    assert met == {"gang_p99": True, "small_p50": True, "wasted": False}


def test_a_peer_dominates_only_if_no_worse_anywhere_and_better_somewhere() -> None:
    figures = ("gang_p99", "small_p50", "wasted")
    # slurm-easy: worse gang p99 than this policy, so it does not dominate; volcano
    # neither (gang p99).
    s = summary({**PEERS, "recommended": (4200.0, 5.2, 60.0)})
    assert dominating_peers(s, "recommended", figures) == []
    # Worse than slurm-easy on all three: dominated by it (and by no one else).
    s = summary({**PEERS, "recommended": (5100.0, 6.5, 1.6)})
    assert dominating_peers(s, "recommended", figures) == ["slurm-easy"]
    # Equal on all three is not dominated (strictly better on one is required).
    s = summary({**PEERS, "recommended": PEERS["slurm-easy"]})
    assert dominating_peers(s, "recommended", figures) == []
    # Equal on two, worse on one: dominated.
    s = summary({**PEERS, "recommended": (5000.0, 6.0, 1.51)})
    assert dominating_peers(s, "recommended", figures) == ["slurm-easy"]
    # On the figures given only: without small p50, volcano-sla beats 4500/-/140.
    s = summary({**PEERS, "recommended": (4500.0, 1.0, 140.0)})
    assert dominating_peers(s, "recommended", ("gang_p99", "wasted")) == ["volcano-sla"]
    assert dominating_peers(s, "recommended", figures) == []


def test_a_missing_figure_or_peer_is_an_error_naming_it() -> None:
    s = summary({**PEERS, "recommended": (4200.0, None, 60.0)})
    with pytest.raises(MissingFigure, match="recommended: no median of small_time_to_start"):
        median(s, "recommended", "small_p50")
    without_kueue = summary({p: v for p, v in PEERS.items() if p != "kueue"})
    with pytest.raises(MissingFigure, match="kueue"):
        best_peer(without_kueue, "wasted")
    with pytest.raises(MissingFigure, match="kueue"):
        mine = {"recommended": s["recommended"]}
        dominating_peers({**without_kueue, **mine}, "recommended", ("wasted",))
