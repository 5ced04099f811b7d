"""Two logs' figures side by side: every figure with its difference, and the groups
whose fate changed most, in a stable order (ADR 0135)."""

from __future__ import annotations

import msgspec

from costart.replay.outcomes.compare import compare
from costart.replay.outcomes.figures import GroupFate, LogFigures, Window
from costart.replay.outcomes.report import comparison_json

S = 10**9


def fate(
    name: str, submitted_s: int, wait_s: float, wasted: float = 0.0, *, started: bool = True
) -> GroupFate:
    return GroupFate(
        name=name,
        occurrence=1,
        submitted_ns=submitted_s * S,
        started_ns=round((submitted_s + wait_s) * S) if started else None,
        ended_ns=None,
        end="running" if started else "waiting",
        wait_s=wait_s,
        censored=not started,
        idle_held_gpu_hours=wasted,
        partial_start_waste_gpu_hours=0.0,
        thrown_away_gpu_hours=0.0,
        wasted_gpu_hours=wasted,
        busy_gpu_hours=0.0,
        restarts=0,
        partial_start=False,
    )


def figures(label: str, fates: list[GroupFate], **fields: object) -> LogFigures:
    base: dict[str, object] = {
        name: 0 for name in LogFigures.__struct_fields__ if name not in ("label", "window")
    }
    base |= {"deadlocked_groups": [], "timeline": [], "fates": fates}
    for name in ("time_to_start_p50_s", "time_to_start_p90_s", "time_to_start_p99_s"):
        base[name] = None
    base["last_event_ns"] = 3600 * S
    return LogFigures(label=label, window=Window(0, 3600 * S), **(base | fields))  # type: ignore[arg-type]


ACTUAL = [
    fate("a", 0, 60, 1.0),
    fate("x", 10, 600, 2.0),
    fate("c", 20, 30, 0.5),
    fate("d", 30, 3570, 4.0, started=False),
    fate("e", 40, 100, 1.0),
    fate("gone", 50, 10),
]
WHATIF = [
    fate("a", 0, 60, 1.0),  # unchanged: in no list
    fate("x", 10, 30, 0.5),  # wait -570 s, wasted -1.5 (submitted before c)
    fate("c", 20, 630, 2.0),  # wait +600 s, wasted +1.5 (ties x's wasted change)
    fate("d", 30, 120, 1.0),  # now starts
    fate("e", 40, 3560, 0.0, started=False),  # no longer starts
    fate("new", 60, 5),
]


def test_each_figure_is_given_for_both_with_whatif_minus_actual() -> None:
    actual = figures(
        "actual", ACTUAL, wasted_gpu_hours=8.5, time_to_start_p50_s=100.0, censored_waits=1
    )
    whatif = figures("what-if", WHATIF, wasted_gpu_hours=4.5, time_to_start_p50_s=120.0)
    rows = {row.figure: row for row in compare(actual, whatif).figures}
    assert (rows["wasted"].actual, rows["wasted"].whatif, rows["wasted"].difference) == (
        8.5,
        4.5,
        -4.0,
    )
    p50 = rows["time to start p50"]
    assert (p50.difference, p50.actual_censored, p50.whatif_censored) == (20.0, True, False)
    assert rows["time to start p90"].difference is None  # unknown on both sides
    assert not rows["wasted"].actual_censored  # only waits are censored


def test_starts_that_changed_are_listed_in_submission_order() -> None:
    comparison = compare(figures("actual", ACTUAL), figures("what-if", WHATIF))
    assert [(c.group, c.change) for c in comparison.start_changed] == [
        ("d", 120 - 3570),
        ("e", 3560 - 100),
    ]


def test_waits_and_wasted_hours_that_changed_most_come_first_ties_by_name() -> None:
    comparison = compare(figures("actual", ACTUAL), figures("what-if", WHATIF))
    assert [(c.group, c.change) for c in comparison.wait_changed] == [
        ("e", 3460.0),  # |+3460| > |-3450|
        ("d", -3450.0),
        ("c", 600.0),
        ("x", -570.0),
    ]
    assert [(c.group, c.change) for c in comparison.wasted_changed] == [
        ("d", -3.0),
        ("c", 1.5),  # c and x changed as much: by name, not by submission
        ("x", -1.5),
        ("e", -1.0),
    ]
    # a did not change; gone and new are in one log only.
    assert "a" not in {c.group for c in comparison.wait_changed + comparison.wasted_changed}
    assert (comparison.only_actual, comparison.only_whatif) == (["gone"], ["new"])


def test_the_lists_are_cut_to_the_most_changed() -> None:
    comparison = compare(figures("actual", ACTUAL), figures("what-if", WHATIF), most=2)
    assert [c.group for c in comparison.wait_changed] == ["e", "d"]
    assert [c.group for c in comparison.wasted_changed] == ["d", "c"]


def test_a_name_submitted_again_is_matched_occurrence_by_occurrence() -> None:
    again = msgspec.structs.replace(fate("a", 100, 5), occurrence=2)
    later = msgspec.structs.replace(fate("a", 100, 50), occurrence=2)
    comparison = compare(
        figures("actual", [fate("a", 0, 60), again]), figures("what-if", [fate("a", 0, 60), later])
    )
    assert [(c.group, c.change) for c in comparison.wait_changed] == [("a#2", 45.0)]


def test_the_json_is_the_same_bytes_for_the_same_logs() -> None:
    one = comparison_json(compare(figures("actual", ACTUAL), figures("what-if", WHATIF)))
    two = comparison_json(compare(figures("actual", ACTUAL), figures("what-if", WHATIF)))
    assert one == two
    decoded = msgspec.json.decode(one)
    assert list(decoded) == sorted(decoded)  # keys sorted
    assert decoded["wait_changed"][0]["group"] == "e"


def test_assumptions_are_kept_and_a_log_carried_past_its_last_event_says_so() -> None:
    quiet = msgspec.structs.replace(figures("what-if", WHATIF), last_event_ns=600 * S)
    comparison = compare(figures("actual", ACTUAL), quiet, assumptions=["runs as recorded"])
    assert comparison.assumptions == [
        "runs as recorded",
        "what-if: nothing happened in the 50m00s after its last event (t+10m00s); "
        "what its groups held then they held to the end",
    ]


def test_groups_that_started_in_both_and_ended_otherwise_are_listed_in_submission_order() -> None:
    def ended(name: str, submitted_s: int, end: str) -> GroupFate:
        return msgspec.structs.replace(fate(name, submitted_s, 30), end=end)

    actual = [ended("p", 0, "succeeded"), ended("q", 5, "failed"), ended("r", 9, "running")]
    whatif = [ended("p", 0, "failed"), ended("q", 5, "failed"), ended("r", 9, "succeeded")]
    comparison = compare(figures("actual", actual), figures("what-if", whatif))
    ends = [(c.group, c.actual, c.whatif) for c in comparison.end_changed]
    assert [(g, a and a.end, w and w.end) for g, a, w in ends] == [
        ("p", "succeeded", "failed"),
        ("r", "running", "succeeded"),
    ]
    assert comparison.changed  # an end that changed is a fate that changed
    # A start that changed is listed as such, not again as an end that changed.
    assert [c.group for c in compare(figures("a", ACTUAL), figures("w", WHATIF)).end_changed] == []
