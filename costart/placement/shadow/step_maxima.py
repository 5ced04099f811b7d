"""The largest use of many step functions over many spans at once: a sparse table per
step function and a lookup of the steps each span covers, both vectorised.

`IndexedProfile` keeps every distinct step function of its nodes as one row of arrays
(the start of each step, its use per dimension; rows padded with steps that never
start). A read of the free capacity over ``[start, end)`` needs, per row, the largest
use among the steps the span covers: steps ``lo .. hi - 1`` where ``lo`` is the step
covering ``start`` and ``hi`` counts the steps starting before ``end``. `Coverage` finds
``lo`` and ``hi`` for every (span, row) by two lookups, and `StepMaxima.peaks`
answers each range maximum with two reads of a sparse table (the maxima of every run of
2^k steps, kept per row: rows never change once made), instead of a masked maximum over
every step of every row. The plain answer is `CapacityProfile.peak`'s walk over one
node's steps; tests compare the two.
"""

from __future__ import annotations

from typing import Final

import numpy as np
import numpy.typing as npt

Ints = npt.NDArray[np.int64]

DIMENSIONS: Final = 3


class Coverage:
    """Which steps a span covers, per row of step starts: ``starts`` (rows, width) holds
    each row's step starts, ascending (padding at or above every end)."""

    def __init__(self, starts: Ints, values: Ints | None = None) -> None:
        """``values``: ascending distinct times holding every start (their own
        distinct values when not given)."""
        rows, width = starts.shape
        # Every start ranked among the values; per row, how many of its starts rank
        # below each rank: a count read by two lookups, whatever the span.
        if values is None:
            values, ranks = np.unique(starts, return_inverse=True)
        else:
            ranks = np.searchsorted(values, starts)
        size = len(values) + 1
        at = np.arange(rows, dtype=np.int64)[:, None] * size + ranks.reshape(rows, width) + 1
        below = np.bincount(at.ravel(), minlength=rows * size).reshape(rows, size)
        self._values = values
        self._below: Ints = np.cumsum(below, axis=1).T.copy()  # (ranks + 1, rows)

    def spans(self, begins: Ints, ends: Ints) -> tuple[Ints, Ints]:
        """For span ``i`` (from ``begins[i]``, before ``ends[i]``, ``ends[i] >
        begins[i]``) and row ``r``: ``lo[i, r]``, the step covering ``begins[i]`` (the
        last starting at or before it; -1 if none), and ``hi[i, r]``, how many steps
        start before ``ends[i]``. Both (spans, rows)."""
        # A start is at or before t iff its rank is below the count of values up to t.
        at_or_before = np.searchsorted(self._values, begins, side="right")
        before = np.searchsorted(self._values, ends, side="left")
        lo: Ints = self._below[at_or_before] - 1
        hi: Ints = self._below[before]
        return lo, hi


class StepMaxima:
    """Per row of step levels (use per dimension of each step), the maxima of every run
    of 2^k steps (k = 0 .. `levels` - 1): a range maximum is two reads."""

    def __init__(self, rows: int, width: int) -> None:
        self.width = width
        self.levels = max(1, width.bit_length())
        # (level, row, step, dimension): a read gathers a row of three dimensions.
        self._table = np.zeros((self.levels, rows, width, DIMENSIONS), dtype=np.int64)
        # Per number of steps n: where the level of the largest 2^k <= n starts, and
        # how far the second read is from the first (n - 2^k).
        k = _log2(np.maximum(np.arange(width + 1, dtype=np.int64), 1))
        self._level_at: Ints = k * rows * width
        self._second: Ints = np.arange(width + 1, dtype=np.int64) - (np.int64(1) << k)

    def set_rows(self, rows: Ints, levels: Ints) -> None:
        """Make the tables of ``rows`` from their step levels, (3, len(rows), width)
        (padding steps use nothing); the table must have room for them (`resized`)."""
        table = self._table
        table[0, rows] = levels.transpose(1, 2, 0)
        for k in range(1, self.levels):
            half = 1 << (k - 1)
            previous = table[k - 1, rows]
            run = previous.copy()
            run[:, : self.width - half] = np.maximum(
                previous[:, : self.width - half], previous[:, half:]
            )
            table[k, rows] = run

    def resized(self, rows: int, width: int, levels: Ints) -> StepMaxima:
        """A table of ``rows`` rows and ``width`` steps made from every row's ``levels``
        (3, rows, width)."""
        bigger = StepMaxima(rows, width)
        bigger.set_rows(np.arange(rows, dtype=np.int64), levels)
        return bigger

    def peaks(self, rows: Ints, lo: Ints, hi: Ints) -> Ints:
        """The largest level of steps ``lo[i, c] .. hi[i, c] - 1`` of row ``rows[c]``,
        per dimension: a new (3, spans, len(rows)) array. Each range holds at least one
        step."""
        steps = hi - lo
        first = lo + rows * self.width + self._level_at[steps]
        flat = self._table.reshape(-1, DIMENSIONS)
        peak = flat.take(first, axis=0)
        np.maximum(peak, flat.take(first + self._second[steps], axis=0), out=peak)
        out: Ints = np.ascontiguousarray(peak.transpose(2, 0, 1))
        return out


def _log2(n: Ints) -> Ints:
    """floor(log2(n)) of each n >= 1."""
    out: Ints = np.zeros(n.shape, dtype=np.int64)
    m = n.copy()
    while True:
        m >>= 1
        more = m > 0
        if not more.any():
            return out
        out += more
