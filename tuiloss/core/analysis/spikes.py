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
from tuiloss.core.analysis.scan import LOCAL_HALF, LOCAL_SIGMAS, Scan
from tuiloss.core.analysis.stats import robust_sigma, running_median

#: Half-width of the band around the pre-spike level, in noise sigmas.
BAND_SIGMAS = 3.0
#: Wide spikes: window of the block trend (fraction of the blocks), sigmas and least rise.
WIDE_WINDOW = 0.1
WIDE_SIGMAS = 6.0
WIDE_FLOOR = math.log(1.3)
#: An excursion longer than this fraction of the run is a change of level, not a spike.
MAX_SPIKE_FRACTION = 0.1
MAX_SPIKE_MIN_POINTS = 20


@dataclass(frozen=True, slots=True)
class Excursion:
    """A stretch of points above the pre-spike band, in finite-point indices.

    Attributes:
        onset: first point above the band.
        peak: highest point.
        end: first point back in the band, or -1 if the series ends above it.
        baseline: level before the onset (analysis space).
        limit: top of the band (analysis space).
    """

    onset: int
    peak: int
    end: int
    baseline: float
    limit: float


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
    """Turn local and wide candidates into non-overlapping excursions, in order."""
    nf = len(y)
    if not nf:
        return []
    items: list[tuple[int, float]] = []
    for scale, i, base in scan.candidates():
        if scale == 1:
            items.append((i, base))
        else:  # the highest point of the group stands for it
            items.append((range_argmax(y, blocks, i * scale, (i + 1) * scale), base))
    items.extend(wide)
    items.sort(key=lambda item: item[0])
    out: list[Excursion] = []
    cursor = 0
    longest = max(MAX_SPIKE_MIN_POINTS, int(MAX_SPIKE_FRACTION * nf))
    for i, base in items:
        if i < cursor:
            continue
        found = _excursion(y, blocks, scan, i, base, cursor)
        if found is None:
            continue
        cursor = found.end if found.end >= 0 else nf
        if found.end >= 0 and found.end - found.onset > longest:
            continue  # a hump: up and back down over a long stretch
        out.append(found)
        if found.end < 0:
            break
    return out


def _excursion(y: np.ndarray, blocks: Blocks, scan: Scan, i: int, base: float, cursor: int) -> Excursion | None:
    sigma = scan.noise_at(i)

    def band(level: float) -> float:
        return max(BAND_SIGMAS * sigma, float(scan.floor(level)) / 2)

    limit = base + band(base)
    j = last_at_most(y, blocks, limit, cursor, i)
    if j < 0:
        if cursor == 0:
            return None  # nothing in the band before it: a start that is high and falling
        onset = cursor
    else:
        onset = j + 1
    pre = base
    for _ in range(2):
        lo = max(cursor, onset - LOCAL_HALF)
        pre = float(np.median(y[lo:onset])) if onset - lo >= 3 else base
        limit = pre + band(pre)
        j = last_at_most(y, blocks, limit, cursor, i)
        if j < 0 or j + 1 == onset:
            break
        onset = j + 1
    end = first_return(y, blocks, limit, i + 1)
    stop = end if end >= 0 else len(y)
    peak = range_argmax(y, blocks, onset, stop)
    if y[peak] - pre <= max(LOCAL_SIGMAS * sigma, float(scan.floor(pre))):
        return None
    return Excursion(onset, peak, end, pre, limit)
