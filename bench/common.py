"""Shared benchmark helpers: median timing, the results file, and a controller over a
store built by the composition root on a ticking clock."""

from __future__ import annotations

import json
import os
import statistics
import sys
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from costart.bootstrap import Settings, bootstrap
from costart.controller import Controller

RESULTS = Path(__file__).resolve().parent / "results"


class Clock:
    """Controller time that advances 1 µs per reading (thread-safe)."""

    def __init__(self) -> None:
        self.now = 0
        self.lock = threading.Lock()

    def __call__(self) -> int:
        with self.lock:
            self.now += 1000
            return self.now


def controller_on(env: Mapping[str, str]) -> Controller:
    """A controller over the store ``env`` selects, placed by hand (no placement step)."""
    return bootstrap(Settings(cluster=None), clock=Clock(), env=env, placement=None)


def median_rate(run: Callable[[], int], repeats: int) -> float:
    """Median of ``repeats`` runs of ``run`` (which returns how many items it did), per second."""
    rates = []
    for _ in range(repeats):
        started = time.perf_counter()
        items = run()
        rates.append(items / (time.perf_counter() - started))
    return statistics.median(rates)


def median_seconds(run: Callable[[], Any], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        run()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def write_results(name: str, figures: dict[str, Any], folder: Path = RESULTS) -> Path:
    """Write ``bench/results/NAME.json`` (or ``folder/NAME.json``: a one-off run goes to
    ``bench/results/ab/``) with the verdict on each of NAME's targets (`targets.TARGETS`)
    added as ``targets_met``, and print the verdicts."""
    from targets import targets_met

    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.json"
    # The machine is shared: how busy it was says how far to trust absolute times.
    machine = {"cpus": os.cpu_count(), "load_average_1m": round(os.getloadavg()[0], 2)}
    verdicts = targets_met(name, figures)
    figures = {**figures, "machine": machine, "targets_met": verdicts}
    path.write_text(json.dumps(figures, indent=2, sort_keys=True) + "\n")
    for target, verdict in verdicts.items():
        state = "met" if verdict["met"] else "NOT MET"
        print(f"  target {target}: {verdict['measured']} {verdict['target']}  {state}")
    print(f"wrote {path.relative_to(RESULTS.parent.parent)}", file=sys.stderr)
    return path
