"""Robust statistics over numpy arrays: running medians, MAD noise, Mann-Kendall, Theil-Sen.

Everything here is a pure function of its inputs and uses only order statistics where a
result must not depend on how an array was split (live analysis relies on that).
"""

from __future__ import annotations

import math

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

#: Scale factor turning a median absolute deviation into a Gaussian standard deviation.
MAD_SCALE = 1.4826
#: Running medians partition at most this many window elements at a time (memory bound).
_PIECE_ELEMENTS = 1 << 22


def window_bounds(i: int, n: int, half: int) -> tuple[int, int]:
    """The window of a centred running median at index ``i``.

    Near the start the window shrinks symmetrically (``[0, 2i+1)``), so a falling
    warm-up is followed exactly; near the end it is shifted left to keep its full
    width, so a rise in the last points still stands out against what came before.
    """
    width = 2 * half + 1
    lo, hi = i - half, i + half + 1
    if lo < 0:
        lo, hi = 0, min(n, 2 * i + 1)
    elif hi > n:
        lo, hi = max(0, n - width), n
    return lo, hi


def running_median(y: np.ndarray, half: int, lo: int = 0, hi: int | None = None) -> np.ndarray:
    """Centred running median of a finite array, for indices ``lo..hi``.

    Windows follow :func:`window_bounds`. Each output is an exact order statistic of
    its window, so computing a range in pieces gives the same numbers as in one go.

    Args:
        y: finite values.
        half: half-width of the window (window ``2*half+1``).
        lo: first index wanted.
        hi: one past the last index wanted (default ``len(y)``).

    Returns:
        An array of ``hi - lo`` medians.
    """
    n = len(y)
    hi = n if hi is None else min(hi, n)
    lo = max(0, lo)
    if hi <= lo:
        return np.empty(0)
    out = np.empty(hi - lo)
    half = max(0, int(half))
    width = 2 * half + 1
    mid_lo, mid_hi = max(lo, half), min(hi, n - half)
    if n >= width and mid_hi > mid_lo:
        # in pieces, so the partitioned copy of the windows stays small
        piece = max(1, _PIECE_ELEMENTS // width)
        for a in range(mid_lo, mid_hi, piece):
            b = min(mid_hi, a + piece)
            view = sliding_window_view(y[a - half : b + half], width)
            out[a - lo : b - lo] = np.partition(view, half, axis=1)[:, half]
    else:
        mid_lo = mid_hi = hi
    # The start: windows [0, 2i+1) for i < half, all at once (NaN pads sort last).
    head = [i for i in range(lo, min(hi, half)) if not (mid_lo <= i < mid_hi) and 2 * i + 1 <= n]
    if head:
        top = 2 * head[-1] + 1
        grid = np.full((len(head), top), np.nan)
        for row, i in enumerate(head):
            grid[row, : 2 * i + 1] = y[: 2 * i + 1]
        grid.sort(axis=1)
        out[np.array(head) - lo] = grid[np.arange(len(head)), np.array(head)]
    done = set(head)
    cache: dict[tuple[int, int], float] = {}
    for i in range(lo, hi):
        if mid_lo <= i < mid_hi or i in done:
            continue
        a, b = window_bounds(i, n, half)
        value = cache.get((a, b))
        if value is None:
            value = cache[(a, b)] = float(np.median(y[a:b]))
        out[i - lo] = value
    return out


def robust_sigma(values: np.ndarray) -> float:
    """MAD-based standard deviation of finite values (0 for fewer than 2)."""
    values = values[np.isfinite(values)]
    if len(values) < 2:
        return 0.0
    return float(MAD_SCALE * np.median(np.abs(values - np.median(values))))


def lag1_autocorrelation(values: np.ndarray, half: int = 4) -> float:
    """Lag-1 autocorrelation of the noise around a slow trend.

    The trend is a running median of ``2*half+1`` points; the correlation is taken on
    what is left. Returned clipped to ``[0, 0.9]`` (0 for fewer than 8 points).
    """
    values = values[np.isfinite(values)]
    if len(values) < 8:
        return 0.0
    r = values - running_median(values, half)
    r = r - r.mean()
    denom = float(np.dot(r, r))
    if denom <= 0:
        return 0.0
    return float(np.clip(np.dot(r[1:], r[:-1]) / denom, 0.0, 0.9))


class KendallTable:
    """Mann-Kendall S for every window ``[a, b)`` of a short series, each in O(1).

    Builds the sign matrix ``sign(x[j] - x[i])`` once (O(m^2)) with 2-D prefix sums.
    """

    __slots__ = ("m", "_cum")

    def __init__(self, x: np.ndarray) -> None:
        self.m = len(x)
        sign = np.sign(x[None, :] - x[:, None])
        sign = np.triu(sign, 1)
        cum = np.zeros((self.m + 1, self.m + 1))
        cum[1:, 1:] = sign.cumsum(0).cumsum(1)
        self._cum = cum

    def s(self, a: int, b: int) -> float:
        """S over pairs ``a <= i < j < b``."""
        c = self._cum
        return float(c[b, b] - c[a, b] - c[b, a] + c[a, a])


def kendall_z(s: float, n: int, inflation: float = 1.0) -> float:
    """Normal score of a Mann-Kendall S over ``n`` points (continuity corrected).

    ``inflation`` multiplies the variance to allow for autocorrelated noise.
    """
    if n < 3:
        return 0.0
    var = n * (n - 1) * (2 * n + 5) / 18.0 * inflation
    if s > 0:
        return (s - 1) / math.sqrt(var)
    if s < 0:
        return (s + 1) / math.sqrt(var)
    return 0.0


def theil_sen(x: np.ndarray, y: np.ndarray) -> float:
    """Median of pairwise slopes (Theil-Sen); 0 when undefined."""
    n = len(x)
    if n < 2:
        return 0.0
    i, j = np.triu_indices(n, 1)
    dx = x[j] - x[i]
    ok = dx != 0
    if not ok.any():
        return 0.0
    return float(np.median((y[j] - y[i])[ok] / dx[ok]))
