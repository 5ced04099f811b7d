"""The range maxima of the shadow planner's index (`costart.placement.shadow.step_maxima`,
ADR 0144) against a plain walk over each step function: the steps a span covers and
their largest use, for random step functions and spans (one step, every step, spans
ending at a step's start, spans without end); and the index's free capacity per class
over many spans at once against the plain profile's, node by node."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from costart.placement.shadow import CapacityProfile, Use
from costart.placement.shadow.indexed import BEFORE, NEVER, IndexedProfile
from costart.placement.shadow.step_maxima import Coverage, StepMaxima

PATHS: Counter[str] = Counter()
H = 3_600_000_000_000
NOW = 5 * H


@st.composite
def _rows(draw: st.DrawFn) -> list[tuple[list[int], list[tuple[int, int, int]]]]:
    """Step functions: ascending step starts from 0 (few distinct times, so rows share
    them), and a use per step; the first may be the timeline without uses (as the index
    holds it: one step from before every time, using nothing)."""
    rows = []
    for i in range(draw(st.integers(1, 6))):
        times = sorted(draw(st.sets(st.integers(1, 12), max_size=9)))
        if i == 0 and draw(st.booleans()):
            rows.append(([BEFORE], [(0, 0, 0)]))
            continue
        starts = [0, *times]
        levels = [
            (draw(st.integers(0, 9)), draw(st.integers(0, 99)), draw(st.integers(0, 999)))
            for _ in starts
        ]
        rows.append((starts, levels))
    return rows


def _plain_peak(
    starts: list[int], levels: list[tuple[int, int, int]], begin: int, end: int | None
) -> tuple[int, int, int]:
    """The largest use over ``[begin, end)`` by walking the steps (as
    `CapacityProfile.peak`): the step covering ``begin`` and every later one starting
    before the end (at least ``begin + 1``)."""
    until = None if end is None else max(end, begin + 1)
    best = (0, 0, 0)
    for i, (t, level) in enumerate(zip(starts, levels, strict=True)):
        following = starts[i + 1] if i + 1 < len(starts) else None
        if (following is None or following > begin) and (until is None or t < until):
            best = (max(best[0], level[0]), max(best[1], level[1]), max(best[2], level[2]))
    return best


@settings(max_examples=300, deadline=None)
@given(
    _rows(),
    st.lists(st.tuples(st.integers(0, 14), st.one_of(st.none(), st.integers(0, 14))), min_size=1),
    st.integers(0, 3),
    st.sets(st.integers(0, 14)),
)
def test_range_maxima_are_the_largest_use_of_the_steps_each_span_covers(
    rows: list[tuple[list[int], list[tuple[int, int, int]]]],
    spans: list[tuple[int, int | None]],
    spare: int,
    other_times: set[int],
) -> None:
    width = max(1, *(len(s) for s, _ in rows)) + spare  # padded as the index pads
    starts = np.full((len(rows), width), NEVER, dtype=np.int64)
    levels = np.zeros((3, len(rows), width), dtype=np.int64)
    for r, (times, uses) in enumerate(rows):
        starts[r, : len(times)] = times
        if uses:
            levels[:, r, : len(uses)] = np.array(uses).T
    # Made for a smaller table first, then grown (as the index grows), and in two parts.
    maxima = StepMaxima(len(rows), 1).resized(len(rows), width, levels)
    half = np.arange(len(rows) // 2, dtype=np.int64)
    maxima.set_rows(half, levels[:, half])
    begins = np.array([b for b, _ in spans], dtype=np.int64)
    ends = np.array([NEVER if e is None else max(e, b + 1) for b, e in spans], dtype=np.int64)
    lo, hi = Coverage(starts).spans(begins, ends)
    # Ranked among more times than the rows' own (as the index ranks them): the same.
    values = np.union1d(starts, np.array(sorted(other_times), dtype=np.int64))
    assert all(
        np.array_equal(a, b)
        for a, b in zip(Coverage(starts, values).spans(begins, ends), (lo, hi), strict=True)
    )
    peaks = maxima.peaks(np.arange(len(rows), dtype=np.int64), lo, hi)
    for i, (begin, end) in enumerate(spans):
        for r, (times, uses) in enumerate(rows):
            got = tuple(int(x) for x in peaks[:, i, r])
            assert got == _plain_peak(times, uses, begin, end), (r, begin, end)
            steps = int(hi[i, r] - lo[i, r])
            empty = times == [BEFORE]
            PATHS["no uses" if empty else "one step" if steps == 1 else "steps > 1"] += 1


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(0, 5),
            st.tuples(st.integers(0, 4), st.integers(0, 30), st.integers(0, 100)),
            st.integers(0, 10),
            st.one_of(st.none(), st.integers(0, 8)),
        ),
        max_size=20,
    ),
    st.lists(st.tuples(st.integers(5, 20), st.one_of(st.none(), st.integers(0, 10))), min_size=1),
)
def test_free_capacity_by_class_over_many_spans_is_the_plain_profiles(
    uses: list[tuple[int, tuple[int, int, int], int, int | None]],
    spans: list[tuple[int, int | None]],
) -> None:
    capacity = [(8, 64, 256)] * 4 + [(4, 32, 128)] * 2
    plain = CapacityProfile(list(capacity), NOW)
    for node, vec, start_h, length_h in uses:
        end = None if length_h is None else (start_h + length_h) * H
        plain.add(Use(node, vec, start_h * H, end, "a", "limit"))
    indexed = IndexedProfile.of(plain)
    begins = [b * H for b, _ in spans]
    ends = [None if e is None else b * H + e * H for b, e in spans]
    by_class = indexed._free_by_class(begins, ends)
    class_of = indexed._classes()[3]
    for i, (begin, end) in enumerate(zip(begins, ends, strict=True)):
        per_node = [tuple(int(x) for x in by_class[:, i, k]) for k in class_of.tolist()]
        assert per_node == plain.free_over(begin, end)
    PATHS[f"classes: {'few' if len(indexed._classes()[1]) < 4 else 'many'}"] += 1


@pytest.fixture(scope="module", autouse=True)
def _paths() -> Iterator[None]:
    yield
    print(f"\nrange maxima paths taken: {dict(sorted(PATHS.items()))}")
