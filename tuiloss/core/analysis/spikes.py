"""Spikes: rises well above the local level, relative to local noise, that come back down.

Two detectors propose candidates and one procedure turns each into an excursion:

* local (per point, in :mod:`scan`): a point more than ``LOCAL_SIGMAS`` robust sigmas
  (and at least 5%) above its running median, or the median just before it. Finds
  one-point spikes, sharp onsets of long spikes and the tops of short ramps; run again on
  medians of groups of 8, 64, ... points, it finds spikes that build up more slowly.
* wide (per block, here): a block median well above a long running median of the block
  medians. Finds spikes that build up slowly over many points (up to ~5-10% of the run).

An excursion starts at the first point above the pre-spike band (walking back from the
candidate), peaks at its maximum, and ends at the first point back inside the band (the
point and the median of it and the next two at or below the band's top). A falling
warm-up, an LR decay and ordinary noise never rise above the band, so they are not spikes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from tuiloss.core.analysis.blocks import Blocks, first_return, last_at_most, range_argmax
from tuiloss.core.analysis.scan import LOCAL_HALF, LOCAL_SIGMAS, NOISE_CHUNK, NOISE_SPREAD, Scan
from tuiloss.core.analysis.stats import mad_sigma, median, robust_sigma, running_median

#: Half-width of the band around the pre-spike level, in noise sigmas.
BAND_SIGMAS = 3.0
#: Wide spikes: window of the block trend (fraction of the blocks), sigmas and least rise.
WIDE_WINDOW = 0.1
WIDE_SIGMAS = 6.0
WIDE_FLOOR = math.log(1.3)
#: Heavy tails: the dips below the running median (which spikes never contaminate: they
#: only go up) show how far the noise itself reaches. The ``TAIL_DIPS`` deepest dips near a
#: candidate give the tail's index (Hill) and scale; a rise must exceed the level that this
#: tail, mirrored upwards, would reach only ``TAIL_EXPECTED`` times among as many points
#: (an index of at least ``TAIL_MIN_INDEX``), and at least the deepest dip; but no more
#: than ``TAIL_CAP`` times it (eight dips extrapolate far: a real 7.6-sigma spike on a noisy
#: curve whose dips reach 4.8 sigmas stays a spike).
#: Gaussian noise gives about ``LOCAL_SIGMAS`` sigmas; Student-t noise, several times more.
TAIL_DIPS = 8
TAIL_EXPECTED = 0.05
TAIL_MIN_INDEX = 3.0
TAIL_CAP = 1.5
#: An excursion longer than this fraction of the run is a change of level, not a spike.
MAX_SPIKE_FRACTION = 0.1
MAX_SPIKE_MIN_POINTS = 64


@dataclass(frozen=True, slots=True)
class Excursion:
    """A stretch of points above the pre-spike band, in finite-point indices.

    Attributes:
        onset: first point above the band.
        peak: highest point.
        end: first point back in the band, or -1 if the series ends above it.
        baseline: level before the onset (analysis space).
        limit: top of the band (analysis space).
        sigma: the local noise it was measured against (analysis space, at its scale).
    """

    onset: int
    peak: int
    end: int
    baseline: float
    limit: float
    sigma: float = 0.0


def block_trend(blocks: Blocks) -> np.ndarray:
    """Long running median of the block medians (robust to spikes up to ~10% of the run)."""
    nb = len(blocks)
    half = max(4, int(round(WIDE_WINDOW * nb)))
    return running_median(blocks.level, half)


def wide_candidates(blocks: Blocks, trend: np.ndarray, scan: Scan) -> list[tuple[int, float]]:
    """Peaks of runs of blocks that stand far above the block trend: ``(index, baseline)``."""
    nb = len(blocks)
    if nb < 9:
        return []
    resid = blocks.level - trend
    sigma = robust_sigma(resid)
    floor = WIDE_FLOOR if scan.log else 0.3 * np.abs(trend)
    high = resid > np.maximum(WIDE_SIGMAS * sigma, floor)
    if not high.any():
        return []
    edges = np.diff(np.concatenate(([0], high.view(np.int8), [0])))
    out = []
    for a, b in zip(np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)):
        k = a + int(np.argmax(blocks.hi[a:b]))
        out.append((int(blocks.arg_hi[k]), float(trend[a])))
    return out


def find_excursions(y: np.ndarray, blocks: Blocks, scan: Scan, wide: list[tuple[int, float]]) -> list[Excursion]:
    """Turn the candidates of every scale into non-overlapping excursions, in order.

    Each scale follows its own candidates on its own values (a slow rise is measured on
    group medians, where it is clear of the noise); excursions of different scales that
    overlap are one excursion, bounded by the finest scale unless a coarser one reaches
    further by more than its group size. An excursion that comes back after more than
    ``MAX_SPIKE_FRACTION`` of the run is a hump, not a spike; one that has not come back
    is kept open (a spike in progress, or the start of a divergence).
    """
    nf = len(y)
    if not nf or not scan.tracks:
        return []
    longest = max(MAX_SPIKE_MIN_POINTS, int(MAX_SPIKE_FRACTION * nf))
    by_scale: dict[int, list[tuple[int, float]]] = {}
    for scale, i, base in scan.candidates():
        by_scale.setdefault(scale, []).append((i, base))
    top = scan.tracks[-1]
    for i, base in wide:
        g = i // top.scale
        if g < len(top.values):
            by_scale.setdefault(top.scale, []).append((g, base))
    found: list[_Found] = []
    for track in scan.tracks:
        items = by_scale.get(track.scale)
        if items:
            found.extend(_follow(track, sorted(items), y, blocks, scan, longest))
    merged = _merge(found, nf)
    out = []
    for ex in merged:
        stop = ex.end if ex.end >= 0 else nf
        if ex.end >= 0 and stop - ex.onset > longest:
            continue  # a hump: up and back down over a long stretch
        out.append(Excursion(ex.onset, range_argmax(y, blocks, ex.onset, stop), ex.end, ex.baseline, ex.limit, ex.sigma))
        if ex.end < 0:
            break
    return out


@dataclass(slots=True)
class _Found:
    scale: int
    onset: int  # raw indices
    end: int
    baseline: float
    limit: float
    sigma: float = 0.0


def _follow(track, items, y, blocks, scan, longest) -> list[_Found]:
    """Excursions of one scale, from its sorted candidates ``(index, baseline)``."""
    k = track.scale
    v = track.values if k > 1 else y
    assist = blocks if k == 1 else None
    cap = longest // k + 2
    # the larger of the two residual noises: the trailing one carries slow wander
    noise = np.fmax(track.noise[0].view, track.noise[1].view)
    out = []
    cursor = 0
    for g, base in items:
        if g < cursor:
            continue
        sigma = float(noise[min(len(noise) - 1, g // NOISE_CHUNK)]) if len(noise) else 0.0
        ex = _excursion(v, assist, scan, g, base, cursor, sigma, cap)
        if ex is None:
            continue
        onset, end, pre, limit = ex
        if out and onset <= cursor:
            # no point back in the band since the last one ended: the same excursion
            out[-1].end = end * k if end >= 0 else -1
        else:
            out.append(_Found(k, onset * k, end * k if end >= 0 else -1, pre, limit, sigma))
        cursor = end if end >= 0 else len(v)
        if end < 0:
            break
    return out


def _merge(found: list[_Found], nf: int) -> list[_Found]:
    """Overlapping excursions of different scales as one, bounded by the finest scale."""
    if not found:
        return []
    found.sort(key=lambda f: f.onset)
    groups: list[list[_Found]] = []
    reach = -1
    for f in found:
        stop = f.end if f.end >= 0 else nf
        if groups and f.onset < reach:
            groups[-1].append(f)
            reach = max(reach, stop)
        else:
            groups.append([f])
            reach = stop
    out = []
    for group in groups:
        group.sort(key=lambda f: f.scale)
        best = group[0]
        onset, end, baseline, limit = best.onset, best.end, best.baseline, best.limit
        for f in group[1:]:
            if f.onset < onset - f.scale:
                onset, baseline, limit = f.onset, f.baseline, f.limit
            if end >= 0 and (f.end < 0 or f.end > end + f.scale):
                end = f.end
        out.append(_Found(best.scale, onset, end, baseline, limit, best.sigma))
    return out


def tail_reach(y: np.ndarray, track, ex: Excursion, spans: tuple[np.ndarray, np.ndarray]) -> float:
    """How high the noise's own tail reaches near an excursion, in noise sigmas (see ``TAIL_DIPS``).

    The dips are the residuals of the finite points ``y`` from the running median of
    ``track`` (scale 1), each in the noise sigmas of its own chunk (not smoothed over
    neighbours: a loss loud early and quiet later has two noises), within ``NOISE_SPREAD``
    chunks of the peak, leaving out every excursion (``spans``: their onsets and ends, -1
    for open) and ``LOCAL_HALF`` points each side of it (the medians it pulls up push its
    neighbours below them). 0 with too few dips. Bounded: it reads only those chunks.
    """
    noise = track.chunk_noise[0].view
    c = ex.peak // NOISE_CHUNK
    lo, hi = max(0, (c - NOISE_SPREAD) * NOISE_CHUNK), min(len(y), (c + NOISE_SPREAD + 1) * NOISE_CHUNK)
    if hi <= lo or not len(noise):
        return 0.0
    chunk = np.minimum(np.arange(lo, hi) // NOISE_CHUNK, len(noise) - 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        near = (y[lo:hi] - track.median(lo, hi)) / noise[chunk]
    onsets, ends = spans
    ends = np.where(ends >= 0, ends, len(y))
    for k in np.flatnonzero((ends + LOCAL_HALF > lo) & (onsets - LOCAL_HALF < hi)):
        near[max(0, int(onsets[k]) - LOCAL_HALF - lo) : max(0, int(ends[k]) + LOCAL_HALF - lo)] = np.nan
    dips = -near[near < 0]
    if len(dips) < 2 * TAIL_DIPS:
        return 0.0
    top = -np.sort(-np.partition(dips, len(dips) - TAIL_DIPS)[-TAIL_DIPS:])
    last = float(top[-1])
    if last <= 0:
        return 0.0
    hill = float(np.mean(np.log(top / last)))
    index = max(TAIL_MIN_INDEX, 1.0 / hill) if hill > 0 else math.inf
    deepest = float(top[0])
    return min(max(last * (TAIL_DIPS / TAIL_EXPECTED) ** (1.0 / index), deepest), tail_cap(1.0 / hill if hill > 0 else math.inf) * deepest)


#: The noise's tail over the whole series. A test near each candidate alone is made once
#: per window, and over a long run of heavy-tailed noise its misses add up to dozens. Each
#: ``NOISE_CHUNK``'s deepest dip is a chunk maximum (their upper tail is the points' tail); a
#: log-log line through two of their order statistics, the ``far``-th and ``near``-th largest
#: (``far`` at least ``REACH_FROM``, so a few odd chunks do not bend it), gives the tail's
#: index and the height that ``REACH_EXPECTED`` chunks of the run would reach by chance. That
#: is capped at :func:`tail_cap` times the deepest dip: a light tail bends down where the
#: line goes on. Series of fewer than ``REACH_CHUNKS`` chunks keep the local reach alone.
REACH_CHUNKS = 16
REACH_FROM = 4
REACH_EXPECTED = 0.05
REACH_MIN_INDEX = 1.0
REACH_BEYOND = 0.2
REACH_CAP_MAX = 2.0


def series_reach(track, spans: tuple[np.ndarray, np.ndarray], nf: int) -> float:
    """How far the noise's own tail reaches over the whole series, in noise sigmas; 0 when the
    series is too short to say (see ``REACH_CHUNKS``).

    From the chunks' deepest dips, mirrored: spikes only go up, so the dips are the noise's
    alone. They leave out the chunks an excursion (``spans``: onsets and ends, -1 for open)
    or the ``LOCAL_HALF`` points each side of it touch: its medians push neighbours below
    them. Bounded: one value per chunk.
    """
    dips = track.chunk_dips.view
    chunks = len(dips)
    if chunks < REACH_CHUNKS:
        return 0.0
    onsets, ends = spans
    clear = np.ones(chunks, dtype=bool)
    for onset, end in zip(onsets, ends):
        stop = (int(end) if end >= 0 else nf) + LOCAL_HALF
        clear[max(0, (int(onset) - LOCAL_HALF) // NOISE_CHUNK) : stop // NOISE_CHUNK + 1] = False
    deepest = float(np.max(dips))
    if int(clear.sum()) < REACH_CHUNKS:  # outliers everywhere (a heavy tail): every chunk, excursions and all
        return _reach(dips, chunks, deepest)
    return _reach(dips[clear], chunks, deepest)


def chunk_sigma(track, ex: Excursion) -> float:
    """The noise sigma :func:`series_reach` is in, at an excursion's peak: its chunk's own (a
    dip was measured against its chunk's), or the excursion's, if smaller."""
    noise = track.chunk_noise[0].view
    if not len(noise):
        return ex.sigma
    own = float(noise[min(len(noise) - 1, ex.peak // NOISE_CHUNK)])
    return min(own, ex.sigma) if own > 0 else ex.sigma


def _reach(maxima: np.ndarray, chunks: int, deepest: float) -> float:
    """Where a power-law tail through two order statistics of ``maxima`` expects
    ``REACH_EXPECTED`` of the series' ``chunks`` (see ``REACH_FROM``), at most
    :func:`tail_cap` times the ``deepest`` dip of them all; 0 with too few.

    ``maxima`` may be of fewer chunks than the series has (those clear of excursions): the
    tail, fitted on them, is carried to all of them (its reach grows with their count)."""
    count = len(maxima)
    if count < REACH_CHUNKS:
        return 0.0
    far = max(REACH_FROM, count // 16)
    near = max(4 * far, count // 4)
    ordered = -np.sort(-np.partition(maxima, count - near)[count - near :])
    high, low = float(ordered[far - 1]), float(ordered[near - 1])
    if low <= 0 or high <= low:
        return high
    index = max(REACH_MIN_INDEX, math.log(near / far) / math.log(high / low))
    return min(high * (far * chunks / count / REACH_EXPECTED) ** (1.0 / index), tail_cap(index) * deepest)


def tail_cap(index: float) -> float:
    """How far above its deepest dip a tail of this index reaches: the factor by which a run's
    highest rise exceeds its deepest dip ``REACH_BEYOND`` of the time, kept between
    ``TAIL_CAP`` (light tails) and ``REACH_CAP_MAX`` (a rise twice the deepest dip stays a
    spike, however heavy the tail)."""
    return min(REACH_CAP_MAX, max(TAIL_CAP, (1.0 / REACH_BEYOND) ** (1.0 / index))) if index > 0 else TAIL_CAP


def _excursion(v, assist, scan, i, base, cursor, sigma, cap):
    """Onset, end, pre-spike level and band top of the excursion around candidate ``i`` of ``v``.

    Returns None when the candidate does not stand out from the level before it.
    """

    def band(level: float) -> float:
        return max(BAND_SIGMAS * sigma, float(scan.floor(level)) / 2)

    limit = base + band(base)
    j = last_at_most(v, assist, limit, cursor, i)
    if j < 0:
        if cursor == 0:
            return None  # nothing in the band before it: a start that is high and falling
        onset = cursor
    else:
        onset = j + 1
    pre = base
    for _ in range(2):
        lo = max(cursor, onset - LOCAL_HALF)
        pre = median(v[lo:onset]) if onset - lo >= 3 else base
        limit = pre + band(pre)
        j = last_at_most(v, assist, limit, cursor, i)
        if j < 0 or j + 1 == onset:
            break
        onset = j + 1
    end = first_return(v, assist, limit, i + 1, i + 1 + cap)
    if end < 0 and i + 1 + cap < len(v):
        end = i + 1 + cap  # still above after the longest spike: a hump or a new level
    stop = end if end >= 0 else len(v)
    if float(np.max(v[onset:stop])) - pre <= max(LOCAL_SIGMAS * sigma, float(scan.floor(pre))):
        return None
    return onset, end, pre, limit


#: Series shorter than this (evaluations, epoch-level logs) also get spikes against the
#: median of the few points before each one: the local detector needs 21 points of history.
SHORT_SERIES = 64
#: ...and at least this many points (fewer are too short to say anything but NaN/Inf).
SHORT_MIN = 20
SHORT_HISTORY = 5
SHORT_SIGMAS = 5.0
#: A short series' spike still up at its last points must have at least doubled (log space).
OPEN_RISE = math.log(2.0)


def short_excursions(y: np.ndarray, scan: Scan, existing: list[Excursion]) -> list[Excursion]:
    """Spikes of a short series: a point more than ``SHORT_SIGMAS`` noise sigmas (and the
    scan's floor) above the median of the ``SHORT_HISTORY`` points before it, ending at
    the first point back within the band (one still up at the end counts only if it is
    one of the last two points, rose sharply, and at least doubled). The noise is the robust spread of the points
    around a running median of 5 (a spike of one or two points leaves it). Excursions
    that overlap one of ``existing`` are left to it."""
    nf = len(y)
    if nf < SHORT_MIN or nf >= SHORT_SERIES:
        return []
    r = y - running_median(y, 2)
    sigma = float(mad_sigma(r))
    taken = [(ex.onset, ex.end if ex.end >= 0 else nf) for ex in existing]
    out = []
    i = 3
    while i < nf:
        base = median(y[max(0, i - SHORT_HISTORY) : i])
        floor = float(scan.floor(base))
        if y[i] - base <= max(SHORT_SIGMAS * sigma, floor):
            i += 1
            continue
        limit = base + max(BAND_SIGMAS * sigma, floor / 2)
        j = i + 1
        while j < nf and y[j] > limit:
            j += 1
        end = j if j < nf else -1
        if end < 0 and (nf - i > 2 or y[i] - y[i - 1] < 0.5 * (y[i] - base) or y[i] - base < float(scan.floor(base)) + OPEN_RISE):
            break  # still up at the end: a lasting change of level or a steady climb, not a spike
        if not any(a < (j if end >= 0 else nf) and i < b for a, b in taken):
            out.append(Excursion(i, i + int(np.argmax(y[i:j])), end, base, limit, sigma))
        i = j + 1 if end >= 0 else nf
    return out
