"""One verdict per run: what a careful reader says about where the curve got to.

The verdicts, in the order they are decided:

* ``too_short``: fewer than ``TOO_SHORT`` (20) finite points, unless at least
  ``FEW_POINTS`` (5) of them barely move (5th-95th percentile spread under 5%) and so
  show ``no_progress``; nothing else is said.
* ``near_zero``: a series oscillating around zero (an RL policy loss): there is no level
  to converge to, and nothing relative is said.
* ``diverged``: a divergence was found (a rise far above the best level that never came
  back, a jump into a dead plateau, or a rise into NaN/Inf), or the series ends in a
  stretch of NaN/Inf (at least 3 points and 1% of them); ``step`` is where it began.
* ``no_progress``: the smoothed loss never went ``NO_PROGRESS`` (10%) below its starting
  level (the median of its first 2% of points, at least 3 and at most 51), nor further
  below it than the noise alone takes it: a flat noisy run's start (a median of a few
  points) and lowest smoothed level (the least of many noisy medians) stand apart by
  chance, ``START_Z`` and ``BEST_Z`` of their standard errors at most. Noise correlated
  from point to point moves the level itself, further than those errors say: nor a fall
  within ``WANDER_Z`` times how far the block levels of the run's second half wander
  by themselves (the spread of their differences over 1, 2, 4, ... blocks), nor within
  ``START_WANDER_Z`` times how far medians of as many points as the start's wander over
  the second half (the start may sit high by chance where the noise is correlated).
* ``unsettled``: the log ends inside a spike that has not recovered yet.
* ``improving``: the loss is still reaching new lows: over the last 20% of the run the
  smoothed level fell at least ``STILL_FALLING`` (3%, and four noise sigmas of the
  smoothed level), to below anything it reached before. A run that only comes back down
  from a bump is not improving.
* ``worsening``: it would be ``converged``, but a drift the wrong way (up for a loss) runs
  to the end of the log (it ends within the last ``DRIFT_AT_END`` of the run's steps) and
  the final level has not come back down half of it: a run that settled and then creeps
  away from its level has not settled. ``step`` is where the drift began (see
  :func:`worse_at_the_end`, which the summary applies with the drifts it found).
* ``converged``: otherwise. ``step`` is the first step after which the smoothed loss
  stays within a band of its final level; the band is ``CONVERGENCE_BAND`` (10%) or
  three noise sigmas of the smoothed loss, whichever is wider, and ``level``, ``low``
  and ``high`` give it. It never falls inside a reported spike (between its onset and
  its recovery): then it is the step of the recovery.

All levels are in the analysis space (the log of a loss); on a linear scale the
relative thresholds are taken of the final level.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from tuiloss.core.analysis.blocks import Blocks
from tuiloss.core.analysis.plateaus import QUANTUM_SPAN, convergence_band, settled_from
from tuiloss.core.analysis.stats import level_wander, mad_sigma, median, running_median

TOO_SHORT = 20
START_POINTS = 51
#: A run that ends in at least this many NaN/Inf points (and 1% of them) ended non-finite.
NONFINITE_END = 3
NO_PROGRESS = math.log(1.1)
#: Standard errors of the start level and of the lowest smoothed level that a flat run's
#: noise may put between them (measured on flat runs of white noise, 30 to 50,000 points:
#: under this bound in 99% of them).
START_Z = 3.5
BEST_Z = 3.0
WANDER_Z = 2.0
#: ... nor a fall within this many times how far medians of as many points as the start's
#: wander over the second half (at most ``WINDOWS`` of them): where the noise is correlated
#: over tens of points, the start's few dozen points may sit high by chance, further than
#: the block levels (each a median of many more points) wander. (At 2, 4% of flat runs in
#: AR(1) noise of phi 0.8-0.95 still pass for converged, against 8% without; at 3, 1%, but
#: a 20% fall in such noise reads as no progress twice as often.)
START_WANDER_Z = 2.0
WINDOWS = 256
STILL_FALLING = math.log(1.03)
#: Fewer points than ``TOO_SHORT`` (but at least this many) can still show no progress,
#: when they barely move: their 5th-95th percentile spread under half of ``NO_PROGRESS``.
FEW_POINTS = 5
KINDS = ("improving", "converged", "no_progress", "diverged", "unsettled", "worsening", "near_zero", "too_short")
#: A drift that ends within this share of the run's steps from the last one runs to the end.
DRIFT_AT_END = 0.05


@dataclass(frozen=True, slots=True)
class Verdict:
    """Where a run got to (see the module notes).

    Attributes:
        kind: one of ``KINDS``.
        step: the convergence step (``converged``), where it diverged (``diverged``), where
            the spike it ends in began (``unsettled``), or where the drift it ends in began
            (``worsening``); None otherwise.
        level: the final level (``converged``, ``no_progress``, ``improving``, ``worsening``), in values.
        low: bottom of the convergence band (``converged``), in values.
        high: top of the convergence band (``converged``), in values.
        start: the starting level, in values (for ``no_progress`` and ``improving``; for
            ``worsening``, the level the drift rose from).
        message: the sentence (worded by :mod:`describe`).
    """

    kind: str
    step: float | None
    level: float | None
    low: float | None
    high: float | None
    start: float | None
    message: str


@dataclass(frozen=True, slots=True)
class Judged:
    """What :func:`judge` decided, before it is worded (analysis space)."""

    kind: str
    index: int | None = None  # finite-point index of ``step``
    level: float | None = None
    band: float | None = None
    start: float | None = None
    previous_best: float | None = None


def _noise(zc: np.ndarray) -> float:
    d = np.diff(zc)
    if len(d) < 4:
        return 0.0
    return float(mad_sigma(d) / math.sqrt(2))


def judge(
    y: np.ndarray,
    blocks: Blocks,
    log: bool,
    quantum: float,
    *,
    diverged_at: int | None,
    ends_nonfinite: bool,
    open_spike: int | None,
    spikes: list[tuple[int, int]],
    half: int,
    near_zero: bool = False,
    point_noise: float = 0.0,
) -> Judged:
    """The verdict of one series (finite values ``y`` in the analysis space).

    Args:
        y: finite values, analysis space.
        blocks: their block summary.
        log: whether ``y`` is a log.
        quantum: the logged precision (0: full precision).
        diverged_at: onset of a divergence (finite index), None if none.
        ends_nonfinite: the series ends in a stretch of NaN/Inf.
        open_spike: onset of a reported spike that has not recovered, None if none.
        spikes: ``(onset, end)`` of each reported, recovered spike (finite indices).
        half: half-width of the running median used inside a block.
        near_zero: the series oscillates around zero (see :mod:`severity`).
        point_noise: the robust noise sigma of single points (analysis space), 0 if unknown.
    """
    nf = len(y)
    if nf < TOO_SHORT:
        if nf >= FEW_POINTS and not near_zero:
            low, high = np.percentile(y, [5, 95])
            level = median(y)
            scale = 1.0 if log else max(abs(level), 1e-12)
            if high - low < 0.5 * _rel(NO_PROGRESS, log) * scale and diverged_at is None:
                return Judged("no_progress", level=level, start=median(y[:3]))
        return Judged("too_short")
    if diverged_at is not None:
        return Judged("diverged", diverged_at)
    if ends_nonfinite:
        return Judged("diverged", nf - 1)
    if near_zero:
        return Judged("near_zero")
    nb = len(blocks)
    width = max(1, int(round(0.025 * nb))) if nb >= 5 else 0
    zc = running_median(blocks.level, width) if width else blocks.level
    k = max(3, min(nf // 50, START_POINTS))
    start = median(y[:k])
    tail = max(1, nb // 20)
    final = median(zc[-tail:])
    scale = 1.0 if log else max(abs(final), abs(start), 1e-12)
    best = float(np.min(zc)) if nb < 20 else float(np.percentile(zc, 5))
    chance = max(_chance_fall(point_noise, k, (2 * width + 1) * nf / nb), WANDER_Z * level_wander(blocks.level[nb // 2 :]),
                 START_WANDER_Z * level_wander(_window_medians(y, k)))
    if start - best < max(_rel(NO_PROGRESS, log) * scale, chance):
        return Judged("no_progress", level=final, start=start)
    if open_spike is not None:
        return Judged("unsettled", open_spike)
    noise = _noise(zc)
    k80 = min(nb - 1, int(0.8 * nb))
    before = float(np.min(zc[: max(1, k80)]))
    need = max(_rel(STILL_FALLING, log) * scale, 4 * noise)
    if log and quantum > 0:  # values logged with few digits move by whole quanta
        need = max(need, math.log1p(QUANTUM_SPAN * quantum / math.exp(final)))
    at80 = median(zc[max(0, k80 - tail // 2) : k80 + tail // 2 + 1])
    if before - final >= need and at80 - final >= need:
        return Judged("improving", level=final, start=start, previous_best=before)
    band = convergence_band(final, noise, quantum, log)
    outside = np.flatnonzero(np.abs(zc - final) > band)
    first = 0 if not len(outside) else min(nb - 1, int(outside[-1]) + 1)
    lo, hi = blocks.start(first), min(nf, blocks.start(first + 1))
    at = min(settled_from(y, lo, hi, final, band, half), nf - 1)
    for onset, end in sorted(spikes):
        if onset <= at < end:  # never inside a spike: from its recovery
            at = min(end, nf - 1)
    return Judged("converged", at, final, band)


def worse_at_the_end(judged: Judged, drift_start: int, drift_end_step: float, start_level: float,
                     end_level: float, first_step: float, last_step: float) -> Judged:
    """``judged``, or ``worsening`` where it says ``converged`` but the run's last drift (from
    finite index ``drift_start`` to ``drift_end_step``, between levels ``start_level`` and
    ``end_level``, analysis space) runs to the end of the log and the final level has not
    come back down half of its rise."""
    if judged.kind != "converged" or judged.level is None:
        return judged
    if drift_end_step < last_step - DRIFT_AT_END * (last_step - first_step):
        return judged
    if judged.level < start_level + 0.5 * (end_level - start_level):
        return judged
    return Judged("worsening", drift_start, judged.level, start=start_level)


def _window_medians(y: np.ndarray, k: int) -> np.ndarray:
    """Medians of windows of ``k`` points (as many as the start level is a median of) over the
    second half of the run, at most ``WINDOWS`` of them, evenly spaced and in order."""
    lo = len(y) // 2
    room = (len(y) - lo) // k
    if room < 4:
        return np.empty(0)
    starts = lo + k * np.unique(np.linspace(0, room - 1, min(room, WINDOWS)).astype(np.int64))
    rows = np.stack([np.asarray(y[a : a + k]) for a in starts])
    return np.median(rows, axis=1)


def _chance_fall(point_noise: float, start_points: int, level_points: float) -> float:
    """How far below the start level the lowest smoothed level of a flat run may fall by chance:
    the start is a median of ``start_points`` points, each smoothed level one of about
    ``level_points`` (a median's standard error is 1.25 sigma over the root of its points)."""
    if point_noise <= 0:
        return 0.0
    return 1.25 * point_noise * (START_Z / math.sqrt(start_points) + BEST_Z / math.sqrt(max(level_points, 1.0)))


def _rel(fraction_log: float, log: bool) -> float:
    return fraction_log if log else math.expm1(fraction_log)
