"""Slow changes: divergence (a rise that never comes back) and drift (a significant upward trend).

Both work on the block medians (see :mod:`blocks`), so their cost is bounded whatever
the length of the run.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from tuiloss.core.analysis.blocks import Blocks, range_argmax
from tuiloss.core.analysis.spikes import Excursion
from tuiloss.core.analysis.stats import (
    kendall_scores,
    KendallTable,
    lag1_autocorrelation,
    level_wander,
    median,
    PairSlopes,
    robust_sigma,
    running_median,
)

#: Divergence: least rise over the lowest level (log space: 1.5x) and how long it must last
#: (points, and fraction of the run) unless it ends in NaN/Inf.
DIVERGENCE_RISE = math.log(1.5)
DIVERGENCE_MIN_POINTS = 10
DIVERGENCE_MIN_FRACTION = 0.05
NONFINITE_RISE = math.log(1.1)
#: ...and that rise must be this many times how far the levels before it wander by themselves
#: (see :func:`~tuiloss.core.analysis.stats.level_wander`), when there are this many of them.
DIVERGENCE_WANDER = 4.0
DIVERGENCE_WANDER_BLOCKS = 16
#: Drift: least significance (Mann-Kendall z, corrected for autocorrelation), least rise
#: (5% in log space), shortest window (blocks, fraction of the series after convergence,
#: raw points).
DRIFT_Z = 4.0
DRIFT_MIN_RISE = math.log(1.05)
#: ...and the rise must be this many times the noise of the block medians.
DRIFT_NOISE_RISE = 2.0
DRIFT_MIN_BLOCKS = 8
DRIFT_MIN_FRACTION = 0.15
DRIFT_MIN_POINTS = 60
#: A drift is bounded where the smoothed level is this part of its rise above the level before
#: it (and where it reaches the level after it, or this part below its top).
DRIFT_EDGE = 0.1
#: A step up that stays: the median of this many levels after a split against those before it,
#: at least this many spreads of such jumps apart, and held for this many levels (see _step_windows).
DRIFT_STEP_SIDE = 3
DRIFT_STEP_SIGMAS = 8.0
DRIFT_STEP_BLOCKS = 12
#: Where convergence (for drift) begins: within 15% of the lowest level, or 25% of the way down.
DRIFT_NEAR = math.log(1.15)


@dataclass(frozen=True, slots=True)
class Divergence:
    """A rise that lasts to the end of the series (finite-point indices, analysis space)."""

    onset: int
    peak: int
    baseline: float
    to_nonfinite: bool


@dataclass(frozen=True, slots=True)
class Drift:
    """A significant upward trend between two blocks (inclusive), with its smoothed levels."""

    start: int
    end: int
    start_level: float
    end_level: float
    ongoing: bool


def _rise_needed(level: float, log: bool, relative: float) -> float:
    return relative if log else (math.exp(relative) - 1.0) * max(abs(level), 1e-12)


def find_divergence(
    y: np.ndarray,
    blocks: Blocks,
    excursions: list[Excursion],
    ends_nonfinite_after: int | None,
    log: bool,
) -> Divergence | None:
    """A rise without recovery, to the end of the log or into NaN/Inf.

    Args:
        y: finite values in the analysis space.
        blocks: their block summary.
        excursions: the spikes found (the last may be open: ``end == -1``).
        ends_nonfinite_after: if the series ends in a non-finite stretch, the number of
            finite points before that stretch; else None.
        log: whether ``y`` is a log.
    """
    nf = len(y)
    if nf < 3:
        return None
    need = max(DIVERGENCE_MIN_POINTS, int(DIVERGENCE_MIN_FRACTION * nf))
    found: list[tuple[int, float]] = []
    if excursions and excursions[-1].end < 0:
        ex = excursions[-1]
        if ends_nonfinite_after is not None and ex.onset < ends_nonfinite_after:
            found.append((ex.onset, ex.baseline))
        elif nf - ex.onset >= need and median(y[-min(5, nf) :]) - ex.baseline >= _rise_needed(
            ex.baseline, log, DIVERGENCE_RISE
        ):
            found.append((ex.onset, ex.baseline))
    nb = len(blocks)
    if nb >= 5:
        half = max(2, int(round(0.02 * nb)))
        zs = running_median(blocks.level, half)
        noise = robust_sigma(np.diff(blocks.level)) / math.sqrt(2)
        smooth_noise = 1.25 * noise / math.sqrt(2 * half + 1)
        j_min = int(np.argmin(zs))
        low = float(zs[j_min])
        rise = float(zs[-1]) - low
        hold = max(1, -(-need // blocks.size))
        held = median(zs[-hold:])
        tail = median(y[-min(5, nf) :])
        # a rise that ends in NaN/Inf needs less to count: the run did not come back
        if ends_nonfinite_after is None:
            big = rise >= max(_rise_needed(low, log, DIVERGENCE_RISE), 6 * noise)
        else:
            big = rise >= max(_rise_needed(low, log, NONFINITE_RISE), 6 * smooth_noise)
        if big and tail >= low + 0.5 * rise and held >= low + 0.5 * rise:
            # onset: where the smoothed loss is last within 10% (or a quarter of the rise) of its low
            step_up = max(min(0.25 * rise, _rise_needed(low, log, math.log(1.1))), 3 * smooth_noise)
            below = np.flatnonzero(zs[j_min:] <= low + step_up)
            j_on = j_min + int(below[-1]) + 1
            # a level that wanders (correlated noise) rises that far by itself, and came back before:
            # how far is read off the levels near the low before the onset (not the fall to it)
            near = low + max(0.25 * (float(np.max(zs[: j_min + 1])) - low), _rise_needed(low, log, DRIFT_NEAR))
            j0 = int(np.flatnonzero(zs[:j_on] <= near)[0])
            before = blocks.level[j0:j_on]
            if len(before) < DIVERGENCE_WANDER_BLOCKS:
                # too few to say: the run reached its low just before (a flat run whose level only
                # wanders reaches it by chance), so every level before the rise is read
                before = blocks.level[:j_on]
            if len(before) >= DIVERGENCE_WANDER_BLOCKS and rise < DIVERGENCE_WANDER * level_wander(before):
                j_on = nb
            if j_on < nb:
                onset = blocks.start(j_on)
                if nf - onset >= need or (ends_nonfinite_after is not None and onset < ends_nonfinite_after):
                    found.append((onset, low))
    if not found:
        return None
    onset, baseline = min(found)
    peak = range_argmax(y, blocks, onset, nf)
    if ends_nonfinite_after is None:
        # Still coming down from its peak: a spike that has not recovered yet, not a divergence.
        # The peak is read off the block medians, so one extreme point (a 2751 on the way up
        # to a level of 50) does not make a lasting jump look like a decay.
        first_block = min(len(blocks) - 1, onset // blocks.size)
        top = min(float(y[peak]), float(np.max(blocks.level[first_block:])))
        tail, base = median(y[-min(5, nf) :]), baseline
        if log:
            tail, top, base = math.exp(tail), math.exp(top), math.exp(base)
        if tail - base < 0.5 * (top - base):
            return None
    return Divergence(onset, peak, baseline, ends_nonfinite_after is not None and onset < ends_nonfinite_after)


#: The points' own autocorrelation is read around a running median this wide (points): a
#: narrower one follows the wander of autocorrelated noise and hides it; a drift, which
#: rises monotonically over at least ``DRIFT_MIN_POINTS``, passes through it.
DRIFT_POINT_HALF = DRIFT_MIN_POINTS // 2
#: ...on at most this many points (the middle of the part after convergence).
DRIFT_POINT_SAMPLE = 8192


def block_autocorrelation(phi: float, size: int) -> float:
    """Lag-1 correlation of means of ``size`` consecutive points of AR(1) noise of lag-1 ``phi``."""
    if phi <= 0 or size <= 1:
        return max(0.0, phi) if size <= 1 else 0.0
    pk = phi**size
    denom = size * (1 + phi) * (1 - phi) - 2 * phi * (1 - pk)
    return float(phi * (1 - pk) ** 2 / denom) if denom > 0 else 0.0


def find_drifts(blocks: Blocks, masked: np.ndarray, stop: int, log: bool, y: np.ndarray | None = None) -> list[Drift]:
    """Upward trends after convergence, bounded in blocks.

    Windows of the block medians (masked blocks, such as spikes, left out) are tested
    with Mann-Kendall (variance inflated for lag-1 autocorrelation); a window counts if
    it is significant at ``DRIFT_Z`` and its Theil-Sen rise is at least ``DRIFT_MIN_RISE``.
    Overlapping windows are merged, kept to the steepest part (windows at least half
    as steep as the steepest), and trimmed to where the smoothed level goes from 10% to
    90% of its rise.

    Args:
        blocks: the block summary.
        masked: True for blocks to leave out.
        stop: first block not to look at (a divergence onset), or ``len(blocks)``.
        log: whether levels are logs.
        y: the finite points (analysis space); their own autocorrelation, carried to the
            blocks, counts when it is larger than the blocks show (few points per block:
            the blocks' running median follows the noise's wander).
    """
    stop = min(stop, len(blocks))
    if stop < DRIFT_MIN_BLOCKS * 2:
        return []
    level = blocks.level[:stop]
    zs = running_median(level, 2)
    j_min = int(np.argmin(zs))
    peak_before = float(np.max(zs[: j_min + 1]))
    low = float(zs[j_min])
    near = low + max(0.25 * (peak_before - low), _rise_needed(low, log, DRIFT_NEAR))
    j0 = int(np.flatnonzero(zs <= near)[0])
    keep = np.flatnonzero(~masked[j0:stop]) + j0
    m = len(keep)
    if m < DRIFT_MIN_BLOCKS * 2:
        return []
    d = level[keep]
    x = keep.astype(np.float64)
    phi = lag1_autocorrelation(d)
    if y is not None and blocks.size < DRIFT_POINT_SAMPLE // DRIFT_MIN_POINTS:
        part = y[blocks.start(j0) : min(len(y), stop * blocks.size)]
        if len(part) > DRIFT_POINT_SAMPLE:
            lo = (len(part) - DRIFT_POINT_SAMPLE) // 2
            part = part[lo : lo + DRIFT_POINT_SAMPLE]
        if len(part) >= 2 * DRIFT_MIN_POINTS:
            phi = max(phi, block_autocorrelation(lag1_autocorrelation(part, DRIFT_POINT_HALF), blocks.size))
    inflation = (1 + phi) / (1 - phi)
    table = KendallTable(d)
    shortest = max(DRIFT_MIN_BLOCKS, int(math.ceil(DRIFT_MIN_FRACTION * m)), -(-DRIFT_MIN_POINTS // blocks.size))
    if shortest > m:
        return []
    lengths = []
    length = shortest
    while length < m:
        lengths.append(length)
        length = max(length + 1, int(length * 1.25))
    lengths.append(m)
    # every window's start and end, its Mann-Kendall score at once; slopes only where it counts
    spans = []
    for length in lengths:
        stride = max(1, length // 6)
        starts = list(range(0, m - length + 1, stride))
        if starts[-1] != m - length:
            starts.append(m - length)
        spans.extend((a, a + length) for a in starts)
    aa, bb = np.array(spans).T
    z = kendall_scores(table.s_many(aa, bb), bb - aa, inflation)
    slopes = PairSlopes(x, d)
    windows: list[tuple[int, int, float]] = []
    for a, b in zip(aa[z >= DRIFT_Z].tolist(), bb[z >= DRIFT_Z].tolist()):
        slope = slopes.median(a, b)
        rise = slope * (x[b - 1] - x[a])
        if rise >= _rise_needed(median(d[a:b]), log, DRIFT_MIN_RISE):
            windows.append((a, b, slope))
    windows.extend(_step_windows(d, x, shortest, log))
    if not windows:
        return []
    # noise of the levels: point to point, or the wander around a short running median
    # (autocorrelated noise wanders further than its steps say), whichever is larger
    noise = max(robust_sigma(np.diff(d)) / math.sqrt(2), robust_sigma(d - running_median(d, max(2, m // 25))))
    out = []
    for a, b in _steep_parts(windows):
        drift = _trim(d, x, a, b, log)
        if drift is not None:
            ja, jb, lo_level, hi_level = drift
            if hi_level - lo_level >= DRIFT_NOISE_RISE * noise:
                out.append(Drift(ja, jb, lo_level, hi_level, jb >= stop - 2))
    return out


def _step_windows(d: np.ndarray, x: np.ndarray, shortest: int, log: bool) -> list[tuple[int, int, float]]:
    """Windows ``(a, b, slope)`` around a step up that stays: the median of the
    ``DRIFT_STEP_SIDE`` levels after a split stands ``DRIFT_MIN_RISE`` and ``DRIFT_STEP_SIGMAS``
    times the robust spread of such jumps at every split above the median of those before
    it, and the levels after it stay at least half that high for ``DRIFT_STEP_BLOCKS`` (or
    half the shortest drift window).

    Mann-Kendall misses a sudden step where the curve was still settling: a window wide
    enough to be significant takes in the fall before the step, whose pairs count against
    the few across it. A step is told by its size against what the same jump measures
    elsewhere in the run instead: the noise, a slow trend and the wander of correlated noise
    all widen that spread, and one step does not.
    """
    m, w = len(d), DRIFT_STEP_SIDE
    hold = max(DRIFT_STEP_BLOCKS, -(-shortest // 2))
    if m < w + hold:
        return []
    sides = np.sort(np.lib.stride_tricks.sliding_window_view(d, w), axis=1)[:, w // 2]  # medians of w levels
    every = sides[w:] - sides[:-w]  # the jump at every split: their spread is what noise and wander do
    spread = robust_sigma(every)
    h = np.arange(w, m - hold + 1)
    jumps = every[: len(h)]
    out: list[tuple[int, int, float]] = []
    for split in h[jumps >= DRIFT_STEP_SIGMAS * spread].tolist():
        before = float(sides[split - w])
        jump = float(sides[split]) - before
        if jump < _rise_needed(before, log, DRIFT_MIN_RISE) or median(d[split : split + hold]) - before < 0.5 * jump:
            continue
        if np.min(d[split : split + w]) <= np.max(d[split - w : split]):
            continue  # the levels either side overlap: no step (the spread above says nothing when it is 0)
        a, b = split - w, split + hold
        out.append((a, b, jump / max(x[b - 1] - x[a], 1.0)))
    return out


def _steep_parts(windows: list[tuple[int, int, float]]) -> list[tuple[int, int]]:
    """Clusters of overlapping windows, each narrowed to windows at least half as steep as its steepest."""
    windows.sort()
    clusters: list[list[tuple[int, int, float]]] = []
    end = -1
    for w in windows:
        if clusters and w[0] < end:
            clusters[-1].append(w)
            end = max(end, w[1])
        else:
            clusters.append([w])
            end = w[1]
    parts = []
    for cluster in clusters:
        top = max(w[2] for w in cluster)
        steep = sorted((a, b) for a, b, s in cluster if s >= 0.5 * top)
        cur_a, cur_b = steep[0]
        for a, b in steep[1:]:
            if a < cur_b:
                cur_b = max(cur_b, b)
            else:
                parts.append((cur_a, cur_b))
                cur_a, cur_b = a, b
        parts.append((cur_a, cur_b))
    return parts


def _trim(d: np.ndarray, x: np.ndarray, a: int, b: int, log: bool) -> tuple[int, int, float, float] | None:
    """Bound the rise inside windows ``a..b`` (indices into ``d``).

    With ``h`` where one step up fits the rise best (see :func:`_step_at`), the level before is
    the median over ``[a, h]`` and the level after the median over ``[h, b)``; the drift
    starts at the last point at or below the level before and ends at the first point at
    or above the level after. For a ramp between flat stretches these are its ends; for
    a hump they bound its steep part.
    """
    zt = running_median(d, 2)
    part = zt[a:b]
    prior_min = np.minimum.accumulate(part)
    top = a + int(np.argmax(part - prior_min))  # largest rise from an earlier low
    lo = a + int(np.argmin(zt[a : top + 1]))
    rise = float(zt[top] - zt[lo])
    if rise < _rise_needed(float(zt[lo]), log, DRIFT_MIN_RISE):
        return None
    h = _step_at(d, lo, top)
    before = median(zt[a : h + 1])
    after = median(zt[h:b])
    hi_level = float(zt[top])
    edge = DRIFT_EDGE * max(hi_level - before, 0.0)  # the noise of a flat level is no part of the rise
    start = lo + int(np.flatnonzero(zt[lo : h + 1] <= before + edge)[-1])
    if top >= len(zt) - 3:
        end = top  # still rising at the end of the data
    else:
        end = h + int(np.flatnonzero(zt[h : top + 1] >= min(after, hi_level - edge))[0])
    if hi_level - before < _rise_needed(before, log, DRIFT_MIN_RISE):
        return None
    return int(x[start]), int(x[end]), before, hi_level


def _step_at(d: np.ndarray, lo: int, top: int) -> int:
    """Where in ``d[lo..top]`` one step up fits best: the split with the largest difference of
    means in standard errors. Robust to a dip of the noise before the rise, which a first
    crossing of the half-way level would take for the rise itself."""
    part = d[lo : top + 1]
    n = len(part)
    if n < 3:
        return top
    cum = np.cumsum(part)
    k = np.arange(1, n)
    before = cum[:-1] / k
    after = (cum[-1] - cum[:-1]) / (n - k)
    score = (after - before) * np.sqrt(k * (n - k) / n)
    return lo + int(np.argmax(score)) + 1
