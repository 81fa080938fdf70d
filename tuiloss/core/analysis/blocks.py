"""A bounded summary of a long series: at most ``MAX_BLOCKS`` blocks of ``2**k`` points each.

The global parts of the analysis (trend, wide spikes, drift, plateaus, convergence) work
on block medians, so their cost does not grow with the length of the run. Block minima
and maxima also let the raw-level searches skip whole blocks. A complete block never
changes as points are appended, so a live analysis computes each one once.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tuiloss.core.analysis.arrays import row_argmax
from tuiloss.core.analysis.stats import median, row_medians

MAX_BLOCKS = 256
#: Raw points checked at once when looking for the end of an excursion.
_SLAB = 512


def block_size(n: int) -> int:
    """Smallest power of two that splits ``n`` points into at most ``MAX_BLOCKS`` blocks."""
    size = 1
    while -(-n // size) > MAX_BLOCKS:
        size *= 2
    return size


@dataclass(frozen=True, slots=True, eq=False)
class Blocks:
    """Per-block statistics of the finite, transformed values ``y``.

    Attributes:
        size: points per block (the last block may be partial).
        level: median of each block.
        lo: minimum of each block.
        hi: maximum of each block.
        arg_hi: index (into ``y``) of the first maximum of each block.
        step: step of each block's middle point.
        first_step: step of each block's first point.
    """

    size: int
    level: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    arg_hi: np.ndarray
    step: np.ndarray
    first_step: np.ndarray

    def __len__(self) -> int:
        return len(self.level)

    def start(self, b: int) -> int:
        return b * self.size


def compute_blocks(y: np.ndarray, steps: np.ndarray, size: int, first: int, last: int) -> tuple[np.ndarray, ...]:
    """Statistics of complete blocks ``first..last`` (exclusive) of ``y``.

    Returns:
        ``(level, lo, hi, arg_hi, step, first_step)`` arrays.
    """
    count = last - first
    if count <= 0:
        empty = np.empty(0)
        return empty, empty, empty, np.empty(0, np.int64), empty, empty
    a, b = first * size, last * size
    view = y[a:b].reshape(count, size)
    level = row_medians(view) if size > 1 else view[:, 0].copy()
    arg = row_argmax(view)
    base = np.arange(first, last, dtype=np.int64) * size
    mid = base + (size - 1) // 2
    return level, view.min(axis=1), view.max(axis=1), base + arg, steps[mid].astype(np.float64), steps[base].astype(np.float64)


def partial_block(y: np.ndarray, steps: np.ndarray, size: int) -> tuple[np.ndarray, ...] | None:
    """Statistics of the incomplete last block, if there is one (same layout as :func:`compute_blocks`)."""
    n = len(y)
    a = (n // size) * size
    if a >= n:
        return None
    part = y[a:]
    return (
        np.array([median(part)]),
        np.array([part.min()]),
        np.array([part.max()]),
        np.array([a + int(part.argmax())], dtype=np.int64),
        np.array([float(steps[a + (n - a - 1) // 2])]),
        np.array([float(steps[a])]),
    )


def assemble(size: int, complete: tuple[np.ndarray, ...], partial: tuple[np.ndarray, ...] | None) -> Blocks:
    parts = complete if partial is None else tuple(np.concatenate((c, p)) for c, p in zip(complete, partial))
    return Blocks(size, *parts)


# -- block-assisted searches over the raw values (exactly what a plain scan would find) --


def last_at_most(y: np.ndarray, blocks: Blocks | None, limit: float, lo: int, hi: int) -> int:
    """Last index ``j`` in ``[lo, hi)`` with ``y[j] <= limit``, or -1 (``blocks`` as in :func:`first_return`)."""
    hi = min(hi, len(y))
    if hi <= lo:
        return -1
    if blocks is None:
        hit = np.flatnonzero(y[lo:hi] <= limit)
        return lo + int(hit[-1]) if len(hit) else -1
    size = blocks.size
    b_last = (hi - 1) // size
    a = max(lo, b_last * size)
    hit = np.flatnonzero(y[a:hi] <= limit)
    if len(hit):
        return a + int(hit[-1])
    if a <= lo:
        return -1
    b_full = -(-lo // size)
    if b_last > b_full:
        ok = np.flatnonzero(blocks.lo[b_full:b_last] <= limit)
        if len(ok):
            b = b_full + int(ok[-1])
            hit = np.flatnonzero(y[b * size : (b + 1) * size] <= limit)
            return b * size + int(hit[-1])
    a2, b2 = lo, min(b_full * size, a)
    if b2 > a2:
        hit = np.flatnonzero(y[a2:b2] <= limit)
        if len(hit):
            return a2 + int(hit[-1])
    return -1


def first_at_most(y: np.ndarray, blocks: Blocks, limit: float, lo: int) -> int:
    """First index ``j >= lo`` with ``y[j] <= limit``, or -1."""
    n = len(y)
    if lo >= n:
        return -1
    size = blocks.size
    b_first = lo // size
    end = min(n, (b_first + 1) * size)
    hit = np.flatnonzero(y[lo:end] <= limit)
    if len(hit):
        return lo + int(hit[0])
    ok = np.flatnonzero(blocks.lo[b_first + 1 :] <= limit)
    if not len(ok):
        return -1
    b = b_first + 1 + int(ok[0])
    hit = np.flatnonzero(y[b * size : min(n, (b + 1) * size)] <= limit)
    return b * size + int(hit[0]) if len(hit) else -1


def first_return(y: np.ndarray, blocks: Blocks | None, limit: float, lo: int, stop: int | None = None) -> int:
    """First ``j`` in ``[lo, stop)`` back in band: ``y[j] <= limit`` and the median of
    ``y[j:j+3]`` too (fewer points near the end). Returns -1 if there is none.

    With ``blocks`` (whose minima summarise ``y``) whole blocks above the band are skipped.
    """
    n = len(y)
    stop = n if stop is None else min(n, stop)
    pos = lo
    while pos < stop:
        if blocks is None:
            hit = np.flatnonzero(y[pos:stop] <= limit)
            j = pos + int(hit[0]) if len(hit) else -1
        else:
            j = first_at_most(y, blocks, limit, pos)
        if j < 0 or j >= stop:
            return -1
        end = min(stop, j + _SLAB)
        ok = _in_band(y, j, end, limit)
        hit = np.flatnonzero(ok)
        if len(hit):
            return j + int(hit[0])
        pos = end
    return -1


def _in_band(y: np.ndarray, a: int, b: int, limit: float) -> np.ndarray:
    n = len(y)
    first = y[a:b]
    second = y[a + 1 : min(n, b + 1)]
    third = y[a + 2 : min(n, b + 2)]
    m = b - a
    pad2 = np.full(m, np.nan)
    pad2[: len(second)] = second
    pad3 = np.full(m, np.nan)
    pad3[: len(third)] = third
    stack = np.stack((first, pad2, pad3), axis=1)
    with np.errstate(invalid="ignore"):
        med = np.nanmedian(stack, axis=1) if (np.isnan(pad3).any()) else np.median(stack, axis=1)
    return (first <= limit) & (med <= limit)


def range_argmax(y: np.ndarray, blocks: Blocks, lo: int, hi: int) -> int:
    """``lo + argmax(y[lo:hi])`` (first maximum), reading whole blocks from their summary."""
    hi = min(hi, len(y))
    if hi <= lo:
        return lo
    size = blocks.size
    b_full = -(-lo // size)
    b_end = hi // size
    if b_end - b_full < 2 or size == 1:
        return lo + int(np.argmax(y[lo:hi]))
    best_i, best_v = -1, -np.inf
    left_end = b_full * size
    if left_end > lo:
        i = lo + int(np.argmax(y[lo:left_end]))
        best_i, best_v = i, y[i]
    k = b_full + int(np.argmax(blocks.hi[b_full:b_end]))
    if blocks.hi[k] > best_v:
        best_i, best_v = int(blocks.arg_hi[k]), blocks.hi[k]
    right = b_end * size
    if hi > right:
        i = right + int(np.argmax(y[right:hi]))
        if y[i] > best_v:
            best_i = i
    return best_i
