"""How much a finding matters, and which spikes are too small to report.

A spike's size is read two ways: relative to the level (``peak / baseline - 1``, the
rise as a fraction of the loss before it) and relative to the noise (the rise in the
analysis space over the local robust noise sigma, at the scale it was found). Its
severity is the geometric mean of the two, each against what a reader calls large and
capped (a 100x spike is not more alarming than a 10x one; a spike is as clear at 20
sigmas as at 200):

    severity = sqrt(min(rise / RISE_UNIT, 10) * min(sigmas / SIGMA_UNIT, 1))

so ``1`` is a loss that doubled and stood 20 noise sigmas out; ``high`` from 1,
``medium`` from 0.5, ``low`` below (a 1.6x spike clear of the noise is medium, a 29x
spike on a noisy curve high, a 1.4x outlier at 7 sigmas low). A spike is reported only when it rose at least
``MIN_RISE`` (30%) above its baseline and ``MIN_SIGMAS`` noise sigmas, or, on a series of at
least ``SMALL_RISE_POINTS`` (500) points, ``SMALL_RISE`` (10%) and ``SMALL_RISE_SIGMAS`` (25):
a language model's loss is quiet, and its spikes are often 10-30% (the summary also checks
those sigmas against the correlation of the points before: correlated noise wanders that
far by itself); on a series whose
outliers come often (heavy-tailed noise: at least ``CROWD`` candidates, one per
``CROWD_POINTS`` points) only the ones at least ``CROWD_HEIGHT`` (2.5) times the typical
outlier's height (in the analysis space; up to 4 times as the outliers grow in number,
as the cube root of their count: the largest of many heavy-tailed outliers grows so), or
``ALWAYS_RISE`` (3x) above the baseline, are. The same holds when at least ``FEW`` (3)
candidates have a median under ``TAIL_SIGMAS`` (10) noise sigmas: outliers that all sit
just over the detection threshold are the tail of the noise, not events. A crowd no denser
than one candidate in ``CLEAR_POINTS`` (500) points keeps every rise at least
``CROWD_CLEAR_SIGMAS`` (12) noise sigmas out: a loss that doubles at each epoch's start is
many events, and a tail puts few that far (the whole run's reach, tested after, still holds).

Near-zero series (not all positive, and a level within a few noise sigmas of zero, such
as RL policy losses oscillating around 0) get no relative findings: a rise there has no
meaningful ratio, so a spike is measured against the robust noise of the points around it
(its own noise: such a loss is loud early and quiet near 0 later), needs
``NEAR_ZERO_SIGMAS`` (20) of them, passes the same heavy-tail test (on those sigmas, not on
heights: one loud early stretch is no yardstick for the quiet rest), and its severity is its
height in those sigmas over ``NEAR_ZERO_HIGH`` (100, capped at 1: medium from 50 sigmas);
its sentence names the baseline, not a ratio, and drifts (a percentage of a level near
zero) are not reported.

NaN/Inf and divergence are ``high`` (severity ``HIGH``); a reset or a stall is
information (0); a drift's severity is its rise over ``DRIFT_UNIT`` (20%); overfitting
is the eval rise over its best value, over ``DRIFT_UNIT``.
"""

from __future__ import annotations

import math
import sys
from typing import Sequence

import numpy as np

from tuiloss.core.analysis.stats import median

RISE_UNIT = 1.0
SIGMA_UNIT = 20.0
MIN_RISE = 0.3
MIN_SIGMAS = 5.0
SMALL_RISE = 0.1
SMALL_RISE_SIGMAS = 25.0
SMALL_RISE_POINTS = 500
NEAR_ZERO_SIGMAS = 20.0
NEAR_ZERO_HIGH = 100.0
CROWD = 6
CROWD_POINTS = 2000
ALWAYS_RISE = 2.0
CROWD_HEIGHT = 2.5
FEW = 3
TAIL_SIGMAS = 10.0
CROWD_HEIGHT_MAX = 4.0
CROWD_CLEAR_SIGMAS = 12.0
CLEAR_POINTS = 500
DRIFT_UNIT = 0.2
HIGH = 10.0
#: Severity words: ``high`` from 1, ``medium`` from 0.5.
HIGH_FROM = 1.0
MEDIUM_FROM = 0.5


def word(severity: float) -> str:
    """``high``, ``medium``, ``low``, or ``info`` for 0 (a reset, a stall)."""
    if severity <= 0:
        return "info"
    if severity >= HIGH_FROM:
        return "high"
    return "medium" if severity >= MEDIUM_FROM else "low"


#: The largest log-space rise whose ratio a float holds.
_LARGEST_LOG = math.log(sys.float_info.max) - 1.0


def rise_of(peak: float, baseline: float, log: bool) -> float | None:
    """How far ``peak`` (analysis space) rose above ``baseline``, as a fraction of the
    baseline; None when the level is not positive (no relative size)."""
    if log:
        return math.expm1(min(peak - baseline, _LARGEST_LOG))  # 1e-300 to 1e300 is a rise, not an overflow
    if baseline > 0:
        return (peak - baseline) / baseline
    return None


def spike_severity(peak: float, baseline: float, sigma: float, log: bool, near_zero: bool) -> float:
    """Severity of a rise from ``baseline`` to ``peak`` (analysis space) over noise ``sigma``."""
    sigmas = (peak - baseline) / sigma if sigma > 0 else math.inf
    rise = None if near_zero else rise_of(peak, baseline, log)
    by_noise = min(sigmas / SIGMA_UNIT, 1.0)
    if rise is None:  # no level to be relative to: its height over its own noise says how much it matters
        return float(min(sigmas / NEAR_ZERO_HIGH, 1.0)) if near_zero else float(by_noise)
    return float(math.sqrt(max(0.0, min(rise / RISE_UNIT, 10.0)) * max(0.0, by_noise)))


def reportable(peaks: Sequence[float], baselines: Sequence[float], sigmas: Sequence[float], nf: int,
               log: bool, near_zero: bool) -> list[bool]:
    """Which of a series' spikes are worth reporting (see the module notes)."""
    peaks = np.asarray(peaks, dtype=np.float64)
    base = np.asarray(baselines, dtype=np.float64)
    sig = np.maximum(np.asarray(sigmas, dtype=np.float64), 1e-300)
    height = peaks - base
    z = height / sig
    if near_zero:
        rise = np.zeros_like(height)  # no level: no rise is large by itself
        keep = z >= NEAR_ZERO_SIGMAS
    else:
        if log:
            rise = np.expm1(height)
        else:
            rise = np.where(base > 0, height / np.where(base > 0, base, 1.0), np.inf)
        keep = (rise >= MIN_RISE) & (z >= MIN_SIGMAS)
        if nf >= SMALL_RISE_POINTS:  # a long, quiet curve (a language model's): a small rise is clear
            keep |= (rise >= SMALL_RISE) & (z >= SMALL_RISE_SIGMAS)
    crowded = len(height) >= max(CROWD, nf // CROWD_POINTS)
    # a few outliers that all sit just over the detection threshold are a noise tail too
    tail = len(height) >= FEW and median(z) < TAIL_SIGMAS
    if near_zero:
        height = z  # each measured against the noise around it: an early loud stretch is no yardstick
    if crowded or tail:
        typical = median(height)
        # the largest of many heavy-tailed outliers grows like their count to the 1/3
        factor = min(CROWD_HEIGHT_MAX, max(CROWD_HEIGHT, len(height) ** (1 / 3)))
        # ...but in a crowd no denser than one in CLEAR_POINTS points, rises far clear of the
        # noise are events (a loss that doubles every epoch): a tail makes few that far out
        clear = (z >= CROWD_CLEAR_SIGMAS) & (len(height) <= nf // CLEAR_POINTS)
        keep &= (height >= factor * typical) | (rise >= ALWAYS_RISE) | clear
    return list(keep)


def is_near_zero(log: bool, values: np.ndarray, noise: float, lowest: float = -math.inf, highest: float = math.inf) -> bool:
    """A series that is not all positive and whose level is within a few noise sigmas of 0.

    ``values`` are its block levels; ``lowest`` and ``highest`` its extreme points: a series
    whose every point is of one sign (an RL return of 150 to 1,030, mirrored to be lower-is-
    better) has a level however loud it is."""
    if log or not len(values) or lowest > 0 or highest < 0:
        return False
    level = median(np.abs(values))
    return level <= 3 * max(noise, 0.0) or bool((values < 0).mean() > 0.05 and (values > 0).mean() > 0.05)
