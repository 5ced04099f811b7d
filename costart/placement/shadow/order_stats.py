"""Quantiles of order statistics: where the i-th of n like runs to end falls.

n runs whose ends are drawn from one distribution do not each end at its median: the
first of them ends much earlier, the last much later. The i-th smallest of n uniform
draws is Beta(i, n - i + 1)-distributed, so the i-th run to end is expected at the
quantile of its distribution that this Beta's ``level`` quantile gives
(`rank_quantile`). Exact (bisection over the binomial tail) up to `EXACT_UP_TO` runs,
a normal approximation of the Beta beyond. Pure arithmetic.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import cache
from typing import Final

EXACT_UP_TO: Final = 40
_STEPS: Final = 40
_Z: Final = {0.1: -1.2815515655446004, 0.5: 0.0, 0.9: 1.2815515655446004}


def _at_most(u: float, i: int, n: int) -> float:
    """P(the i-th smallest of n uniform draws <= u) = P(Binomial(n, u) >= i)."""
    return sum(math.comb(n, j) * u**j * (1 - u) ** (n - j) for j in range(i, n + 1))


@cache
def rank_quantile(i: int, n: int, level: float) -> float:
    """The ``level`` quantile (0 < level < 1) of the i-th smallest (1-based) of n
    uniform draws: a number in (0, 1)."""
    if not (1 <= i <= n and 0 < level < 1):
        raise ValueError(f"rank {i} of {n} at level {level} is not defined")
    if n > EXACT_UP_TO:
        mean = i / (n + 1)
        z = _Z.get(level)
        if z is None:
            raise ValueError(f"level {level} has no normal approximation (use 0.1, 0.5, 0.9)")
        spread = math.sqrt(mean * (1 - mean) / (n + 2))
        return min(max(mean + z * spread, 0.5 / (n + 1)), 1 - 0.5 / (n + 1))
    low, high = 0.0, 1.0
    for _ in range(_STEPS):
        mid = (low + high) / 2
        if _at_most(mid, i, n) < level:
            low = mid
        else:
            high = mid
    return (low + high) / 2


def sample_quantile(samples: list[int], u: float) -> int:
    """The nearest-rank ``u`` quantile (0 < u <= 1) of ``samples`` (not empty)."""
    return sorted_quantile(sorted(samples), u)


def sorted_quantile(ordered: Sequence[int], u: float) -> int:
    """`sample_quantile` of samples already in ascending order."""
    rank = min(len(ordered), max(1, math.ceil(u * len(ordered))))
    return ordered[rank - 1]
