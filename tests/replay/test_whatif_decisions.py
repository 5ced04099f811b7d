"""Two decision streams compared: the first divergence by index, the count of decisions
one has and the other has not, and a decision's words (times as clock text)."""

from __future__ import annotations

from costart.replay.whatif.decisions import Decision, differing, first_divergence

S = 10**9


def _d(at_s: int, kind: str = "MemberPlaced", detail: str = "{}") -> Decision:
    return Decision(at_s * S, kind, "g", "m", detail)


def test_equal_streams_have_no_divergence() -> None:
    stream = [_d(1), _d(2, "GroupPlaced")]
    assert first_divergence(stream, list(stream)) is None
    assert differing(stream, list(stream)) == 0


def test_the_first_divergence_is_named_by_index_and_both_sides() -> None:
    a = [_d(1), _d(2), _d(3)]
    b = [_d(1), _d(4), _d(3)]
    found = first_divergence(a, b)
    assert found is not None and (found.index, found.recorded, found.whatif) == (1, a[1], b[1])
    assert differing(a, b) == 2  # one each side


def test_a_stream_that_ends_first_diverges_where_it_ends() -> None:
    a = [_d(1), _d(2)]
    found = first_divergence(a, a[:1])
    assert found is not None and (found.index, found.whatif) == (1, None)
    assert differing(a, a[:1]) == 1


def test_the_count_is_of_a_multiset_not_of_positions() -> None:
    """The same decisions in another order differ in place but not in count; a
    repeated decision counts as often as it is made."""
    a = [_d(1), _d(1, "GroupPlaced")]
    assert differing(a, list(reversed(a))) == 0
    assert differing([_d(1), _d(1)], [_d(1)]) == 1


def test_a_decision_reads_with_times_as_clock_text() -> None:
    decision = Decision(
        4 * 60 * S,
        "GroupPlaced",
        "grpo-000",
        "",
        '{"attempt":1,"barrier_deadline_ns":860000000000,"reason":{"until_ns":300000000000}}',
    )
    assert decision.text() == (
        'GroupPlaced grpo-000 attempt=1 barrier_deadline=t+14m20s reason={"until":"t+5m00s"}'
    )
