"""The log digest of every simulator scenario × policy × seed, recorded and checked.

Log bytes change only on purpose (one commit re-records this file and says why):
``python -m tests.sim.log_digests --record`` writes ``recorded_log_digests.json``;
``--check`` compares every run with it and lists the ones that moved. The test suite
checks the first seeds in CI and all of them in the slow profile.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from costart.sim.results import POLICIES
from tests.sim.helpers import SIM_SCENARIOS, run, setup_of

RECORDED = Path(__file__).with_name("recorded_log_digests.json")
SEEDS = range(1, 16)


def key(scenario: str, policy: str, seed: int) -> str:
    return f"{scenario}/{policy}/{seed}"


def digest_of(scenario: str, policy: str, seed: int) -> str:
    return run(setup_of(scenario, seed), policy).log_sha256


def all_keys(seeds: range = SEEDS) -> list[tuple[str, str, int]]:
    return [(s, p, seed) for s in SIM_SCENARIOS for p in POLICIES for seed in seeds]


def recorded() -> dict[str, str]:
    loaded: dict[str, str] = json.loads(RECORDED.read_text())
    return loaded


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--record", action="store_true", help="write the recorded digests")
    parser.add_argument("--seeds", type=int, default=len(SEEDS), help="seeds 1..N")
    args = parser.parse_args(argv)
    keys = all_keys(range(1, args.seeds + 1))
    now: dict[str, str] = {}
    for n, (scenario, policy, seed) in enumerate(keys, 1):
        now[key(scenario, policy, seed)] = digest_of(scenario, policy, seed)
        print(f"\r{n}/{len(keys)}", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    if args.record:
        RECORDED.write_text(json.dumps(now, indent=1, sort_keys=True) + "\n")
        print(f"recorded {len(now)} digests in {RECORDED.name}")
        return 0
    before = recorded()
    moved = sorted(k for k, v in now.items() if before.get(k) != v)
    for k in moved:
        print(f"moved: {k} {before.get(k)} -> {now[k]}")
    print(f"{len(now) - len(moved)}/{len(now)} log digests unchanged")
    return 1 if moved else 0


if __name__ == "__main__":
    sys.exit(main())
