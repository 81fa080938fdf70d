"""Plateaus (stretches where the smoothed loss barely moves per decade of steps) and convergence.

Both read the block medians (see :mod:`blocks`); the statistics of a plateau come from
at most ``MAX_SAMPLE`` of its raw points, taken at a fixed stride, so the cost is bounded.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from tuiloss.core.analysis.blocks import Blocks
from tuiloss.core.analysis.stats import mad_sigma, median, running_median, window_bounds

#: Largest change of the smoothed loss (natural log, i.e. ~relative) per decade of steps.
PLATEAU_RATE = 0.07
#: Shortest plateau: blocks, and fraction of the run's blocks; and it must span at least
#: ``PLATEAU_MIN_DECADES`` of steps unless it covers ``PLATEAU_LONG_FRACTION`` of the run.
PLATEAU_MIN_BLOCKS = 8
PLATEAU_MIN_FRACTION = 0.1
PLATEAU_MIN_DECADES = 0.1
PLATEAU_LONG_FRACTION = 0.25
#: Values logged with one significant digit (fewer than this many quanta) are flat
#: when they move by at most ``QUANTUM_SPAN`` quanta.
QUANTUM_LEVEL = 10
QUANTUM_SPAN = 3
#: Convergence: band around the final level (log space), and the most the final 20% of
#: the run may still move per decade of steps for the run to count as settled.
CONVERGENCE_BAND = math.log(1.1)
SETTLE_RATE = 0.4
MAX_SAMPLE = 4096


def convergence_band(final: float, noise: float, quantum: float, log: bool) -> float:
    """How far from its final level a converged curve may stray: 10% (on the log-loss when
    ``log``), three noise sigmas, or, for a value printed in coarse steps, a few of them."""
    if not log:
        return max(0.1 * abs(final), 3 * noise)
    band = max(CONVERGENCE_BAND, 3 * noise)
    if quantum > 0:
        band = max(band, math.log1p(QUANTUM_SPAN * quantum / math.exp(final)))
    return band


@dataclass(frozen=True, slots=True)
class Plateau:
    """A stretch where the loss stays level.

    Attributes:
        start_step: first step of the stretch.
        end_step: last step of the stretch.
        mean: mean of the values in it (spikes left out).
        low: 5th percentile of the values.
        high: 95th percentile of the values.
        std: standard deviation of the values.
    """

    start_step: float
    end_step: float
    mean: float
    low: float
    high: float
    std: float


def decade_positions(steps: np.ndarray) -> np.ndarray:
    """``log10(step)``, with steps below the first positive spacing clamped to it."""
    steps = np.asarray(steps, dtype=np.float64)
    positive = steps[steps > 0]
    if not len(positive):
        return np.arange(len(steps), dtype=np.float64) * 1e-3
    gaps = np.diff(positive)
    gaps = gaps[gaps > 0]
    smallest = min(float(positive[0]), float(np.min(gaps)) if len(gaps) else float(positive[0]))
    return np.log10(np.maximum(steps, smallest))


class _RangeTable:
    """O(1) min/max over any ``[a, b]`` of a short array (sparse table)."""

    def __init__(self, z: np.ndarray) -> None:
        self.mins = [z]
        self.maxs = [z]
        k = 1
        while 2 * k <= len(z):
            prev_min, prev_max = self.mins[-1], self.maxs[-1]
            self.mins.append(np.minimum(prev_min[:-k], prev_min[k:]))
            self.maxs.append(np.maximum(prev_max[:-k], prev_max[k:]))
            k *= 2

    def minmax(self, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``min(z[a..b])`` and ``max(z[a..b])`` for arrays of inclusive bounds."""
        length = b - a + 1
        level = np.floor(np.log2(np.maximum(length, 1))).astype(int)
        lo_out = np.empty(len(a))
        hi_out = np.empty(len(a))
        for lv in range(int(level.max()) + 1 if len(level) else 0):
            sel = level == lv
            if not sel.any():
                continue
            span = 1 << int(lv)
            lo, hi = a[sel], b[sel] - span + 1
            lo_out[sel] = np.minimum(self.mins[lv][lo], self.mins[lv][hi])
            hi_out[sel] = np.maximum(self.maxs[lv][lo], self.maxs[lv][hi])
        return lo_out, hi_out


def bridge_levels(blocks: Blocks, masked: np.ndarray) -> np.ndarray:
    """Block medians with masked blocks (spikes) bridged linearly from their neighbours."""
    level = blocks.level.copy()
    if masked.any() and (~masked).sum() >= 2:
        good = np.flatnonzero(~masked)
        level[masked] = np.interp(np.flatnonzero(masked), good, level[good])
    return level


def smooth_levels(level: np.ndarray) -> np.ndarray:
    """A short running median of the (bridged) block medians."""
    half = max(1, int(round(0.02 * len(level))))
    return running_median(level, half)


class _Thirds:
    """How much a stretch of levels moves, from the means of its thirds (O(1) per stretch).

    ``move(a, b)`` is the larger of the change between the first and last thirds and
    twice the bulge of the middle third, less three standard errors of that change,
    scaled to the length of the stretch.
    """

    def __init__(self, level: np.ndarray) -> None:
        self.csum = np.concatenate(([0.0], np.cumsum(level)))
        d = np.diff(level)
        self.sigma = float(mad_sigma(d) / math.sqrt(2)) if len(d) >= 4 else 0.0

    def move(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        c = self.csum
        m = b - a + 1
        t = np.maximum(m // 3, 1)
        first = (c[a + t] - c[a]) / t
        last = (c[b + 1] - c[b + 1 - t]) / t
        has_middle = m - 2 * t >= 1
        inner = np.maximum(m - 2 * t, 1)
        mid_hi = np.maximum(b + 1 - t, a + t)
        middle = np.where(has_middle, (c[mid_hi] - c[a + t]) / inner, 0.5 * (first + last))
        # the thirds' means are 2/3 of a steady change apart: scale back to the whole stretch
        change = 1.5 * np.maximum(np.abs(last - first), 2 * np.abs(middle - 0.5 * (first + last)))
        return change - 1.5 * 3 * self.sigma * np.sqrt(2.0 / t)


def find_plateaus(
    blocks: Blocks, level: np.ndarray, log: bool, quantum: float
) -> list[tuple[int, int]]:
    """Stretches of blocks ``(a, b)`` (inclusive) where the level (block medians, spikes
    bridged) is flat.

    A stretch is flat when it moves (see :class:`_Thirds`: first against last third, and
    any bulge in the middle, beyond noise) by at most ``PLATEAU_RATE`` per decade of steps
    it spans; and the same holds for its first half and first quarter (so a long flat
    tail does not excuse a slow descent before it). Values logged with a single
    significant digit are flat when they move by at most a few quanta. Plateaus are
    found greedily from the end of the run.
    """
    nb = len(level)
    shortest = max(PLATEAU_MIN_BLOCKS, int(math.ceil(PLATEAU_MIN_FRACTION * nb)))
    if nb < shortest:
        return []
    x = decade_positions(blocks.first_step)
    zs = smooth_levels(level)
    # the quantum rule can only hold where the level comes down to a few quanta
    coarse = quantum > 0 and log and float(np.exp(np.min(zs))) <= QUANTUM_LEVEL * quantum
    table = _RangeTable(zs) if coarse else None
    thirds = _Thirds(level)
    if log:
        scale = np.ones(nb)
    else:
        spread_all = float(np.max(zs) - np.min(zs))
        scale = np.maximum(np.abs(zs), 0.01 * spread_all + 1e-12)

    def first_flat(ends: np.ndarray) -> np.ndarray:
        """For each end block ``j``, the first start ``a`` with ``(a, j)`` flat, or -1."""
        counts = ends - shortest + 2
        jj = np.repeat(ends, counts)
        offsets = np.cumsum(counts) - counts
        aa = np.arange(len(jj)) - np.repeat(offsets, counts)
        ok = _flat(table, thirds, zs, x, scale, aa, jj, coarse, quantum)
        for part in (2, 4):
            ok &= _flat(table, thirds, zs, x, scale, aa, aa + (jj - aa) // part, coarse, quantum)
        firsts = np.full(len(ends), -1)
        hits = np.flatnonzero(ok)
        if len(hits):
            column = np.searchsorted(offsets, hits, side="right") - 1
            seen, where = np.unique(column, return_index=True)
            firsts[seen] = aa[hits[where]]
        return firsts

    # Greedy from the end: try the stretches ending at j, else step j back. Only the
    # columns the walk visits are evaluated, in batches that grow, since most runs end
    # on a plateau found in the first column.
    out: list[tuple[int, int]] = []
    j = nb - 1
    step = max(1, nb // 64)
    while j + 1 >= shortest:
        lattice = np.arange(j, shortest - 2, -step)
        found = False
        done, batch = 0, 1
        while done < len(lattice) and not found:
            ends = lattice[done : done + batch]
            for end, start in zip(ends.tolist(), first_flat(ends).tolist()):
                if start < 0:
                    continue
                long_enough = x[end] - x[start] >= PLATEAU_MIN_DECADES or end - start + 1 >= PLATEAU_LONG_FRACTION * nb
                if long_enough:
                    out.append((start, end))
                    j = start - 1
                    found = True
                    break
            done += batch
            batch *= 4
        if not found:
            break
    out.reverse()
    return out


def _noise(zs: np.ndarray) -> float:
    d = np.diff(zs)
    if len(d) < 4:
        return 0.0
    return float(mad_sigma(d) / math.sqrt(2))


def _flat(table, thirds, zs, x, scale, a, b, coarse, quantum) -> np.ndarray:
    span = np.maximum(x[b] - x[a], 0.0)
    ok = thirds.move(a, b) <= PLATEAU_RATE * span * scale[b]
    if coarse:
        low, high = table.minmax(a, b)
        top = np.exp(high)
        small = top <= QUANTUM_LEVEL * quantum
        ok |= small & (top - np.exp(low) <= QUANTUM_SPAN * quantum * (1 + 1e-9))
    return ok


def plateau_stats(values: np.ndarray, lo: int, hi: int, skip: list[tuple[int, int]]) -> tuple[float, float, float, float]:
    """Mean, 5th and 95th percentile and std of ``values[lo:hi]`` without the ``skip`` ranges.

    Reads at most ``MAX_SAMPLE`` points, evenly strided, so the cost is bounded.
    """
    count = hi - lo
    stride = max(1, -(-count // MAX_SAMPLE))
    idx = np.arange(lo, hi, stride)
    if skip:
        keep = np.ones(len(idx), bool)
        for a, b in skip:
            keep &= ~((idx >= a) & (idx < b))
        if keep.sum() >= 3:
            idx = idx[keep]
    sample = values[idx]
    low, high = np.percentile(sample, [5, 95])
    return float(np.mean(sample)), float(low), float(high), float(np.std(sample))


@dataclass(frozen=True, slots=True)
class Settling:
    """Where a run settled: the first block from which its smoothed (transformed) values stay
    within ``band`` of ``level``, their final level."""

    block: int
    level: float
    band: float


def find_convergence(blocks: Blocks, log: bool, quantum: float) -> Settling | None:
    """Where the smoothed loss comes to stay within a band of its final level, or None.

    Spikes are not left out: a long excursion means the run had not settled yet. The
    run must have settled: over its last 20% the smoothed loss may move at most
    ``SETTLE_RATE`` per decade of steps (beyond noise). The band is 10% (in log space)
    or three noise sigmas of the smoothed loss, whichever is wider.
    """
    nb = len(blocks)
    if nb < 10:
        return None
    zc = running_median(blocks.level, max(2, int(round(0.025 * nb))))
    x = decade_positions(blocks.first_step)
    tail = max(3, nb // 20)
    final = median(zc[-tail:])
    noise = _noise(zc)
    k80 = int(0.8 * nb)
    around = median(zc[max(0, k80 - tail // 2) : k80 + tail // 2 + 1])
    span = max(float(x[-1] - x[k80]), 1e-9)
    scale = 1.0 if log else max(abs(final), 1e-12)
    if abs(final - around) - 2 * noise > SETTLE_RATE * span * scale:
        return None
    band = convergence_band(final, noise, quantum, log)
    outside = np.flatnonzero(np.abs(zc - final) > band)
    first = 0 if not len(outside) else int(outside[-1]) + 1
    if first >= nb:
        return None
    return Settling(first, final, band)


def settled_from(y: np.ndarray, lo: int, hi: int, level: float, band: float, half: int) -> int:
    """First index of ``y[lo:hi]`` from which its running median stays within ``band`` of
    ``level`` (``hi`` when none does).

    Blocks hold equal numbers of points, so where the logging interval changes (every
    100 steps, then every step) one block can hold a whole descent; looking inside the
    block at the edge places the change at its point instead of the block's first step.

    The medians themselves are not needed, only which side of the band each lies on:
    ``|x - level| > band`` holds for the values above one threshold and below another,
    so an odd window's median is outside exactly when more than half its values are
    outside on one side. Counting those with prefix sums costs O(n) for any window.
    """
    n = len(y)
    if hi <= lo:
        return lo
    if n < 2 * half + 1:  # windows of even length: their medians are means
        z = running_median(y, half, lo, hi)
        outside = np.flatnonzero(np.abs(z - level) > band)
        return lo if not len(outside) else lo + int(outside[-1]) + 1
    first, last = window_bounds(lo, n, half)[0], window_bounds(hi - 1, n, half)[1]
    d = y[first:last] - level
    above = np.concatenate(([0], np.cumsum(d > band)))
    below = np.concatenate(([0], np.cumsum(d < -band)))
    i = np.arange(lo, hi)
    a, b = i - half, i + half + 1
    start = a < 0
    a[start], b[start] = 0, 2 * i[start] + 1
    end = b > n
    a[end], b[end] = n - (2 * half + 1), n
    a, b = a - first, b - first
    need = (b - a) // 2 + 1
    outside = np.flatnonzero((above[b] - above[a] >= need) | (below[b] - below[a] >= need))
    return lo if not len(outside) else lo + int(outside[-1]) + 1
