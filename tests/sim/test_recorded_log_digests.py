"""Every scenario × policy × seed writes the log bytes recorded in
`recorded_log_digests.json` (re-record only on purpose: ``python -m tests.sim.log_digests
--record``, in one commit that says why)."""

from __future__ import annotations

import pytest

from tests.sim.log_digests import all_keys, digest_of, key, recorded


@pytest.mark.parametrize(("scenario", "policy", "seed"), all_keys())
def test_the_log_bytes_are_the_recorded_ones(scenario: str, policy: str, seed: int) -> None:
    assert digest_of(scenario, policy, seed) == recorded()[key(scenario, policy, seed)]


def test_every_run_has_a_recorded_digest() -> None:
    assert sorted(recorded()) == sorted(key(*k) for k in all_keys())
