"""The raw baseline the replay benchmark's ratios are measured against cannot move
unnoticed: its source is pinned by hash (issue 33, ADR 0089). Changing it is changing
the yardstick: update the hash in the same commit and say why in an ADR."""

from __future__ import annotations

import hashlib
from pathlib import Path

RAW_BASELINE = Path(__file__).resolve().parents[1] / "bench" / "raw_baseline.py"
PINNED_SHA256 = "8c66cc667a56a27c5b67947428fbc7a2c1fcd2b2aae2111854e6cca8cf073214"


def test_the_raw_baseline_source_is_the_pinned_one() -> None:
    digest = hashlib.sha256(RAW_BASELINE.read_bytes()).hexdigest()
    assert digest == PINNED_SHA256, f"bench/raw_baseline.py changed: sha256 {digest}"
