"""The board at scale (docs/design.md §10, issue 38): with N groups on the board, how
long an event takes from its commit to the page, measured in the test browser.

A real `costart serve` on 127.0.0.1 (LMDB store) holds N groups; headless Chromium
(selenium through the distribution's chromedriver) opens the groups table, timing the
first render. A MutationObserver in the page notes when each group's row appears or
changes state (the browser's clock, the same wall clock as ours). Then, one at a time,
a group is submitted or a live one cancelled through the API: the latency is from the
event's own time (``submitted_at_ns`` or ``ended_at_ns`` in the answer: the controller
stamps the event before it commits it, so this covers the commit) to the moment the row
shows the new state. The latency from just before the request was sent is kept beside
it (``from_request``): it adds the API's answer time under load. ``--groups 100`` is the CI variant
(tests/board/test_board_scale.py); the default 1,000 is the run whose figures are
committed in ``bench/results/board.json``.

    python bench/bench_board.py [--groups 1000] [--samples 60]
"""

from __future__ import annotations

import argparse
import collections
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the board's serve and browser helpers live with its tests

from tests.board.browser import Serve, log_in, new_driver  # noqa: E402
from tests.rest.dispatch_support import OWNER, life_spec, tokens_toml  # noqa: E402

OBSERVER = """
window.seen = [];
const note = (row) => window.seen.push(
  [row.dataset.group, row.dataset.state, performance.timeOrigin + performance.now()]);
new MutationObserver((changes) => {
  for (const c of changes) for (const n of c.addedNodes)
    if (n.nodeType === 1 && n.matches('tr.group')) note(n);
}).observe(document.getElementById('groups'), {childList: true});
"""
WAIT_S = 20


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _wait_seen(driver: Any, name: str, states: set[str], after: int) -> tuple[float, int]:
    """(browser ms when the row of ``name`` first showed one of ``states``, the count of
    notes read up to it: the next wait reads from there)."""
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        seen = driver.execute_script("return window.seen.slice(arguments[0])", after)
        for offset, (group, state, at_ms) in enumerate(seen):
            if group == name and state in states:
                return float(at_ms), after + offset + 1
        time.sleep(0.005)
    raise RuntimeError(f"the row of {name} never showed {sorted(states)}")


def _wait_logged_in(driver: Any) -> None:
    """Until the login's answer (the groups table) is loaded."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(driver, WAIT_S).until(
        lambda d: d.find_elements(By.ID, "groups"), "the login never reached the groups table"
    )


def _events_after(store: Path, position: int) -> dict[str, int]:
    """How many events of each type the log holds after ``position`` (read once the
    server stopped): what the live phase made the server write and stream."""
    from costart.store.replay_log import open_log

    counts: collections.Counter[str] = collections.Counter()
    with open_log(store) as log:
        for _, event in log.source.read_events(after=position):
            counts[type(event).__name__] += 1
    return dict(sorted(counts.items()))


def measure(groups: int, samples: int) -> dict[str, Any]:
    """The figures of one run with ``groups`` groups and ``samples`` live changes."""
    with tempfile.TemporaryDirectory() as tmp:
        serve = Serve(Path(tmp), tokens_toml(), "--interval", "0.1")
        serve.start()
        driver = new_driver()
        try:
            api = httpx.Client(
                base_url=serve.url, headers={"Authorization": f"Bearer {OWNER}"}, timeout=30
            )
            for i in range(groups):
                answer = api.post("/v1/groups", json=life_spec(f"bg-{i}"))
                assert answer.status_code == 201, answer.text
            log_in(driver, serve.url, OWNER)
            _wait_logged_in(driver)  # a navigation now would cancel the login's post
            started = time.perf_counter()
            driver.get(serve.url + "/")
            first_render_s = time.perf_counter() - started
            rows = driver.execute_script("return document.querySelectorAll('tr.group').length")
            assert rows == groups, f"{rows} rows for {groups} groups"
            live_from = int(driver.execute_script("return document.body.dataset.position"))
            driver.execute_script(OBSERVER)
            deadline = time.monotonic() + WAIT_S
            while driver.find_element("id", "live").text != "live":
                if time.monotonic() > deadline:
                    raise RuntimeError("the page never went live")
                time.sleep(0.01)
            latencies: list[float] = []  # from the event's time
            from_request: list[float] = []  # from just before the request was sent
            seen_from = 0
            for k in range(samples):
                if k % 2 == 0:  # a new group: its row appears
                    name = f"live-{k}"
                    sent_ms = time.time() * 1000
                    answer = api.post("/v1/groups", json=life_spec(name))
                    assert answer.status_code == 201, answer.text
                    event_ms = answer.json()["submitted_at_ns"] / 1e6
                    states = {"PENDING", "RESERVING", "HELD", "PLACED"}
                else:  # a live group cancelled: its row turns CANCELLED
                    name = f"bg-{k}"
                    sent_ms = time.time() * 1000
                    answer = api.post(f"/v1/groups/{name}/cancel")
                    assert answer.status_code == 200, answer.text
                    event_ms = answer.json()["ended_at_ns"] / 1e6
                    states = {"CANCELLED"}
                shown_ms, seen_from = _wait_seen(driver, name, states, seen_from)
                latencies.append((shown_ms - event_ms) / 1000)
                from_request.append((shown_ms - sent_ms) / 1000)
        finally:
            driver.quit()
            serve.stop()
        written = _events_after(Path(tmp) / "store", live_from)
    cancels = samples // 2
    return {
        "groups": groups,
        "samples": samples,
        "first_render_s": round(first_render_s, 3),
        "live": {
            "p50_s": round(statistics.median(latencies), 3),
            "p95_s": round(_percentile(latencies, 0.95), 3),
            "max_s": round(max(latencies), 3),
            "from_request_p95_s": round(_percentile(from_request, 0.95), 3),
            "slowest": sorted(
                (round(a, 3), "submit" if k % 2 == 0 else "cancel") for k, a in enumerate(latencies)
            )[-5:],
        },
        "measured_from": "the event's time (stamped before its commit) to the row on the page",
        "live_phase_events": {"total": sum(written.values()), **written},
        "pend_reasons_per_cancel": round(written.get("PendReasonChanged", 0) / max(1, cancels), 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--groups", type=int, default=1000)
    parser.add_argument("--samples", type=int, default=60)
    args = parser.parse_args()
    figures = measure(args.groups, args.samples)
    print(figures)
    if args.groups == 1000:
        sys.path.insert(0, str(ROOT / "bench"))
        from common import write_results

        write_results("board", figures)


if __name__ == "__main__":
    main()
