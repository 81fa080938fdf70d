"""Smoothing for the chart: TensorBoard-style EMA and a rolling median, optionally in log space.

Both keep non-finite points where they are (NaN stays NaN, so a gap stays visible) and
never let them poison the points around them.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

# Largest power of 1/weight a chunk may reach before rescaling (keeps cumsum finite).
_MAX_GROWTH = 1e100


def _to_space(values: np.ndarray, log: bool) -> np.ndarray:
    values = np.asarray(values, dtype=np.float64)
    if not log:
        return values
    out = np.full(values.shape, np.nan)
    positive = values > 0
    with np.errstate(invalid="ignore", divide="ignore"):
        out[positive] = np.log10(values[positive])
    out[~np.isfinite(values)] = np.nan
    return out


def _from_space(values: np.ndarray, log: bool) -> np.ndarray:
    if not log:
        return values
    with np.errstate(over="ignore"):
        return np.power(10.0, values)


def ema(values: np.ndarray, weight: float, *, log: bool = False) -> np.ndarray:
    """TensorBoard's debiased exponential moving average.

    ``s_k = (w * acc_{k-1} + (1 - w) * x_k) / (1 - w**(k+1))`` over the finite points,
    so the first points are not dragged towards zero. Non-finite points come out as
    NaN and are skipped by the average. Vectorised: the recursion is evaluated in
    chunks with cumulative sums, each chunk short enough for ``w**-k`` to stay finite.

    Args:
        values: the series (any float array).
        weight: smoothing weight, clipped to ``[0, 0.999]``; 0 returns the input.
        log: smooth ``log10(values)`` and map back, for a log y axis. Values ``<= 0``
            have no logarithm and come out as NaN.

    Returns:
        An array of the same length.
    """
    x = _to_space(values, log)
    out = np.full(x.shape, np.nan)
    finite = np.isfinite(x)
    if not finite.any():
        return out
    w = float(np.clip(weight if math.isfinite(weight) else 0.0, 0.0, 0.999))
    xs = x[finite]
    if w == 0.0:
        out[finite] = xs
        return _from_space(out, log)
    chunk = max(1, int(math.log(_MAX_GROWTH) / -math.log(w)))
    smoothed = np.empty(len(xs))
    acc = 0.0  # biased accumulator, TensorBoard's "last"
    done = 0
    while done < len(xs):
        part = xs[done : done + chunk]
        k = np.arange(1, len(part) + 1, dtype=np.float64)
        decay = np.power(w, k)  # w**k, k = 1..len
        grow = np.power(w, -k)  # w**-k
        # acc_k = w**k * acc_0 + (1-w) * sum_{j<=k} w**(k-j) x_j
        biased = decay * (acc + (1.0 - w) * np.cumsum(part * grow))
        count = np.arange(done + 1, done + len(part) + 1, dtype=np.float64)
        smoothed[done : done + len(part)] = biased / (1.0 - np.power(w, count))
        acc = float(biased[-1])
        done += len(part)
    out[finite] = smoothed
    return _from_space(out, log)


def rolling_median(values: np.ndarray, window: int, *, log: bool = False) -> np.ndarray:
    """Centred rolling median over ``window`` points, ignoring non-finite neighbours.

    Near the ends the window is truncated. A non-finite point stays NaN.

    Args:
        values: the series.
        window: number of points (made odd; 1 or less returns the input).
        log: take the median of ``log10(values)`` (same result for positive values,
            but non-positive values are left out, as on a log axis).

    Returns:
        An array of the same length.
    """
    x = _to_space(values, log)
    n = len(x)
    out = np.full(n, np.nan)
    if n == 0:
        return out
    window = int(window)
    finite = np.isfinite(x)
    if window <= 1:
        out[finite] = x[finite]
        return _from_space(out, log)
    half = window // 2
    padded = np.concatenate((np.full(half, np.nan), np.where(finite, x, np.nan), np.full(half, np.nan)))
    view = sliding_window_view(padded, 2 * half + 1)
    rows = np.flatnonzero(finite)
    # Sorting puts NaN last; pick the middle of the finite part of each row.
    step = max(1, 2_000_000 // (2 * half + 1))
    for start in range(0, len(rows), step):
        idx = rows[start : start + step]
        block = np.sort(view[idx], axis=1)
        count = np.isfinite(block).sum(axis=1)
        lo = (count - 1) // 2
        hi = count // 2
        pick = np.arange(len(idx))
        out[idx] = 0.5 * (block[pick, lo] + block[pick, hi])
    return _from_space(out, log)
