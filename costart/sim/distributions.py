"""Distributions a simulation scenario draws durations from.

Written in a scenario as a table tagged by ``dist`` (durations as text with a unit, as in
group specs):

```toml
claim_delay = { dist = "exp", mean = "30s" }
runtime = { dist = "lognormal", median = "2h", sigma = 0.6 }
down_for = { dist = "uniform", low = "5m", high = "30m" }
timeout = { dist = "const", value = "90s" }
```

Every draw takes the `random.Random` to draw from (never the module-level one) and
returns integer nanoseconds: floats stay inside the simulator and never reach the log.
"""

from __future__ import annotations

import functools
import math
import random

import msgspec

from costart.domain.durations import parse_duration_ns


class DistError(ValueError):
    """A bad distribution parameter. ``path`` names the field (``mean``)."""

    def __init__(self, path: str, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(f"{path}: {reason}")


@functools.lru_cache(maxsize=1024)
def _ns(field: str, text: str) -> int:
    try:
        return parse_duration_ns(text)
    except ValueError as error:
        raise DistError(field, str(error)) from None


class Const(msgspec.Struct, frozen=True, tag="const", tag_field="dist", forbid_unknown_fields=True):
    value: str

    def check(self) -> None:
        _ns("value", self.value)

    def draw_ns(self, rng: random.Random) -> int:
        return _ns("value", self.value)

    def mean_ns(self) -> int:
        return _ns("value", self.value)


class Exp(msgspec.Struct, frozen=True, tag="exp", tag_field="dist", forbid_unknown_fields=True):
    """Exponential with the given mean (memoryless arrivals, delays, times to failure)."""

    mean: str

    def check(self) -> None:
        if _ns("mean", self.mean) <= 0:
            raise DistError("mean", "must be longer than 0s")

    def draw_ns(self, rng: random.Random) -> int:
        return int(rng.expovariate(1.0) * _ns("mean", self.mean))

    def mean_ns(self) -> int:
        return _ns("mean", self.mean)


class Uniform(
    msgspec.Struct, frozen=True, tag="uniform", tag_field="dist", forbid_unknown_fields=True
):
    low: str
    high: str

    def check(self) -> None:
        if _ns("high", self.high) < _ns("low", self.low):
            raise DistError("high", f"{self.high!r} is less than low {self.low!r}")

    def draw_ns(self, rng: random.Random) -> int:
        low, high = _ns("low", self.low), _ns("high", self.high)
        return low + int(rng.random() * (high - low))

    def mean_ns(self) -> int:
        return (_ns("low", self.low) + _ns("high", self.high)) // 2


class LogNormal(
    msgspec.Struct, frozen=True, tag="lognormal", tag_field="dist", forbid_unknown_fields=True
):
    """Log-normal by its median and the sigma of the underlying normal: heavy-tailed run
    times, as cluster traces show."""

    median: str
    sigma: float = 1.0
    max: str | None = None

    def check(self) -> None:
        if _ns("median", self.median) <= 0:
            raise DistError("median", "must be longer than 0s")
        if not 0 <= self.sigma <= 5:
            raise DistError("sigma", f"must be between 0 and 5 (got {self.sigma})")
        if self.max is not None and _ns("max", self.max) < _ns("median", self.median):
            raise DistError("max", "is less than the median")

    def draw_ns(self, rng: random.Random) -> int:
        value = int(_ns("median", self.median) * math.exp(self.sigma * rng.gauss(0.0, 1.0)))
        return value if self.max is None else min(value, _ns("max", self.max))

    def mean_ns(self) -> int:
        return int(_ns("median", self.median) * math.exp(self.sigma**2 / 2))


Dist = Const | Exp | Uniform | LogNormal
ZERO: Dist = Const("0s")


def describe(dist: Dist) -> str:
    """A one-line text of the distribution, for the printed options."""
    fields = {f: getattr(dist, f) for f in dist.__struct_fields__}
    inner = ", ".join(f"{k}={v}" for k, v in fields.items() if v is not None)
    return f"{type(dist).__struct_config__.tag}({inner})"
