"""Benchmark of failover on one host (issue 7, ADR 0009): a leader `costart serve` and a
warm standby on one LMDB store; the leader is SIGKILLed and we time how long until the
standby acknowledges a write (a group submitted over REST returns 201).

The figure is dominated by the lease: the standby may only take it once it expired, i.e.
up to one lease duration after the leader's last renewal (renewals come every third of
it). The rest -- noticing (50 ms poll), acquiring, adopting the warm state, starting the
REST server -- is reported as ``after_expiry_s``. Medians of a few runs per lease length.

Run: python bench/bench_failover.py [--quick]
"""

from __future__ import annotations

import argparse
import signal
import statistics
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

from common import write_results

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.ha.procs import ServeProcess, submit, submit_until_accepted  # noqa: E402

WARM_GROUPS = 200
TIMEOUT_S = 30.0


def unix_s(timestamp: str) -> float:
    return datetime.fromisoformat(timestamp.replace("Z", "+00:00")).timestamp()


def one_failover(lease_s: float) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="costart-failover-") as tmp:
        logs = Path(tmp)
        store = logs / "store"
        leader = ServeProcess(store, logs, standby=False, lease_s=lease_s, name="leader")
        standby: ServeProcess | None = None
        try:
            leader.wait_serving()
            standby = ServeProcess(store, logs, standby=True, lease_s=lease_s, name="standby")
            standby.wait_for("standby tailing", TIMEOUT_S)
            for i in range(WARM_GROUPS):
                assert submit(leader.url, f"warm-{i}") == 201
            killed_wall = time.time()
            started = time.perf_counter()
            leader.signal(signal.SIGKILL)
            submit_until_accepted(standby.url, "first-after-failover", TIMEOUT_S)
            failover_s = time.perf_counter() - started
            acquired = standby.wait_for("lease acquired", TIMEOUT_S)
            promoted = standby.wait_for("promoted", TIMEOUT_S)
            return {
                "failover_s": failover_s,
                "lease_acquired_s": unix_s(acquired["timestamp"]) - killed_wall,
                "promoted_s": unix_s(promoted["timestamp"]) - killed_wall,
                "after_expiry_s": failover_s - (unix_s(acquired["timestamp"]) - killed_wall),
            }
        finally:
            leader.close()
            if standby is not None:
                standby.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer runs")
    args = parser.parse_args()
    runs = 2 if args.quick else 5
    figures: dict[str, object] = {"runs": runs, "warm_groups": WARM_GROUPS}
    for lease_s in (2.0, 1.0):
        samples = [one_failover(lease_s) for _ in range(runs)]
        row = {
            key: round(statistics.median(s[key] for s in samples), 3)
            for key in ("failover_s", "lease_acquired_s", "promoted_s", "after_expiry_s")
        }
        row["failover_max_s"] = round(max(s["failover_s"] for s in samples), 3)
        figures[f"lease_{lease_s:g}s"] = row
        print(
            f"lease {lease_s:g} s: failover (SIGKILL -> standby's first 201) median "
            f"{row['failover_s']:.3f} s, max {row['failover_max_s']:.3f} s; "
            f"lease taken after {row['lease_acquired_s']:.3f} s, "
            f"serving writes {row['after_expiry_s']:.3f} s later"
        )
    write_results("failover", figures)


if __name__ == "__main__":
    main()
