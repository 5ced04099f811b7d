"""The HTML timeline in a real headless browser (Debian's chromium, installed by
scripts/ensure-chromium.sh): its markers are counted in the DOM the browser built and
compared with the log, and a screenshot is kept as a test artifact
(``$COSTART_TEST_ARTIFACTS``, default ``test-artifacts/``)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import pytest
from rich.console import Console

from costart.cli.walkthrough import run_demo
from costart.replay.source import RecorderSource
from costart.replay.timeline import group_timeline, marker_kind
from costart.replay.timeline_html import MARKER_COLOURS, STATE_COLOURS, render_html

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = Path(os.environ.get("COSTART_TEST_ARTIFACTS", ROOT / "test-artifacts"))
BROWSER_TIMEOUT_S = 60


def chromium() -> str:
    found = os.environ.get("COSTART_CHROMIUM") or next(
        (p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p),
        None,
    )
    if found is None:
        pytest.fail("no headless Chromium: run scripts/ensure-chromium.sh (make test does)")
    return found


def browse(page: Path, *args: str) -> str:
    command = [
        chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
        # Offline: any attempt to fetch from the network fails the page, not the test.
        "--proxy-server=127.0.0.1:9", "--proxy-bypass-list=<-loopback>",
        *args, page.as_uri(),
    ]  # fmt: skip
    done = subprocess.run(
        command, check=False, capture_output=True, text=True, timeout=BROWSER_TIMEOUT_S
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    """The walkthrough's group (a rollout failure and restart, a group restart) as HTML,
    with the marker kinds its log holds."""
    tmp = tmp_path_factory.mktemp("timeline")
    controller = run_demo(
        ROOT / "scenarios" / "rl-post-training.toml", Console(file=(tmp / "out.txt").open("w"))
    )
    source = RecorderSource(controller.recorder)
    timeline = group_timeline(source, "grpo-run-42")
    group_id = controller.group("grpo-run-42").id
    expected = Counter(
        kind
        for _, event in source.read_events()
        if event.group_id == group_id and (kind := marker_kind(event)) is not None
    )
    path = tmp / "timeline.html"
    path.write_text(render_html(timeline))
    return path, timeline, expected


def test_the_browser_shows_one_marker_per_failure_restart_and_timeout_in_the_log(page):
    path, timeline, expected = page
    dom = browse(path, "--dump-dom")
    shown = Counter(re.findall(r'class="marker marker-(\w+)"', dom))
    assert expected["failure"] >= 1 and expected["restart"] >= 1  # the story has both
    assert shown == expected
    # Each marker sits on its own lane (a failure of the rollout on the rollout lane).
    lanes = Counter(re.findall(r'class="marker marker-failure" data-lane="(\w+)"', dom))
    assert lanes == Counter(m.lane for m in timeline.markers if m.kind == "failure")
    # A time axis with labelled ticks, from +0s.
    ticks = re.findall(r'<text class="tick-label"[^>]*>([^<]+)</text>', dom)
    assert ticks[0] == "+0s" and len(ticks) >= 3
    assert "<script" not in dom and "PendReason(" not in dom


def test_every_state_has_its_own_colour() -> None:
    assert len(set(STATE_COLOURS.values())) == len(STATE_COLOURS)
    assert STATE_COLOURS["RESERVING"] != STATE_COLOURS["HELD"]


def test_a_screenshot_is_kept_and_shows_the_failure_markers(page):
    path, _, _ = page
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shot = ARTIFACTS / "timeline.png"
    shot.unlink(missing_ok=True)
    browse(path, f"--screenshot={shot}", "--window-size=1200,900")
    import matplotlib.image

    pixels = matplotlib.image.imread(str(shot))
    rgb = {
        tuple(round(float(c) * 255) for c in px[:3]) for px in pixels.reshape(-1, pixels.shape[-1])
    }
    red = tuple(int(MARKER_COLOURS["failure"][i : i + 2], 16) for i in (1, 3, 5))
    running = tuple(int(STATE_COLOURS["RUNNING"][i : i + 2], 16) for i in (1, 3, 5))
    assert red in rgb and running in rgb
