"""The board benchmark's CI variant: 100 groups on the board, an event on the page within
1 s of its commit (p95, in the test browser). The 1,000-group run is the benchmark
itself (``python bench/bench_board.py``, figures in bench/results/board.json) and the
slow-marked test below."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import bench_board


def test_with_100_groups_an_event_is_on_the_page_within_a_second():
    figures = bench_board.measure(groups=100, samples=30)
    print(figures)
    assert figures["live"]["p95_s"] <= 1.0, figures
    assert figures["first_render_s"] <= 3.0, figures


@pytest.mark.slow
def test_with_1000_groups_an_event_is_on_the_page_within_a_second():
    figures = bench_board.measure(groups=1000, samples=60)
    print(figures)
    assert figures["live"]["p95_s"] <= 1.0, figures
    assert figures["first_render_s"] <= 3.0, figures
