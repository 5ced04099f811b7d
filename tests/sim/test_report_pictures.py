"""The report's pictures tell what the tables tell: a policy whose groups never started
is drawn hatched to its censored wait and labelled with the count (never a short bar
that reads as fast), wasted GPU-hours are drawn first in their three parts, and the demo
prints and draws its headline (the naive start's waste against costart's) first."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pytest
from typer.testing import CliRunner

from costart.cli.main import app
from costart.cli.sim_demo import headline
from costart.sim.report import build_report, waste_bars, workload_bars, write_plot
from tests.sim.helpers import run, setup_of


@pytest.fixture(scope="module")
def trap_report():
    setup = setup_of("deadlock-trap", 1)
    results = [run(setup, p) for p in ("atomic", "independent", "yunikorn")]
    return build_report(setup, results, [])


def test_a_policy_whose_gangs_never_started_is_drawn_hatched_tall_and_labelled(trap_report):
    figure, axes = plt.subplots()
    workload_bars(axes, trap_report)
    bars = list(axes.patches)
    atomic, independent, yunikorn = bars  # one workload (gang), three policies
    for stuck in (independent, yunikorn):
        assert stuck.get_hatch() == "xx"
        # the censored wait: until the run's end (24 h), not zero
        assert stuck.get_height() > 20
    assert not atomic.get_hatch() and atomic.get_height() < stuck.get_height()
    labels = [t.get_text() for t in axes.texts]
    assert labels.count("3 never\nstarted") == 2
    plt.close(figure)


def test_wasted_gpu_hours_are_drawn_first_in_their_three_parts(trap_report):
    figure, axes = plt.subplots()
    waste_bars(axes, trap_report)
    tops: dict[float, float] = {}
    for patch in axes.patches:
        x = round(patch.get_x() + patch.get_width() / 2, 3)
        tops[x] = max(tops.get(x, 0.0), patch.get_y() + patch.get_height())
    wasted = [r.wasted_gpu_hours for r in trap_report.policies]
    assert [round(tops[x], 2) for x in sorted(tops)] == pytest.approx(wasted, abs=0.01)
    notes = " ".join(t.get_text() for t in axes.texts)
    assert "3 never started" in notes and "3 partial starts" in notes
    plt.close(figure)


def test_the_plot_is_written(trap_report, tmp_path):
    path = tmp_path / "report.png"
    write_plot(trap_report, 384, path, headline=headline(trap_report))
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_headline_puts_the_naive_start_first(trap_report):
    lines = headline(trap_report).splitlines()
    assert lines[0].startswith("independent: 3 partial starts,")
    assert "wasted GPU-hours" in lines[0] and "failed groups" in lines[0]
    assert lines[1].startswith("atomic: 0 partial starts")


def test_make_demo_prints_its_headline_before_any_table(tmp_path):
    out = CliRunner().invoke(app, ["--store", str(tmp_path / "store"), "demo"])
    assert out.exit_code == 0, out.stdout
    text = out.stdout
    first = text.index("Wasted by each start policy")
    assert first < text.index("FIGURE")
    assert text.index("independent:", first) < text.index("atomic:", first)
    assert (tmp_path / "demo-report" / "report.png").exists()
