"""Robust statistics over numpy arrays: running medians, MAD noise, Mann-Kendall, Theil-Sen.

Everything here is a pure function of its inputs and uses only order statistics where a
result must not depend on how an array was split (live analysis relies on that).
"""

from __future__ import annotations

import functools
import math

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

#: Scale factor turning a median absolute deviation into a Gaussian standard deviation.
MAD_SCALE = 1.4826
#: Running medians partition at most this many window elements at a time (memory bound).
_PIECE_ELEMENTS = 1 << 22
#: Values sorted at a time by the running median of long series: a buffer that stays in cache.
_BUFFER_ELEMENTS = 1 << 17
#: Rows up to this long are sorted to find their median (numpy sorts short rows in vector
#: registers: twice as fast as a selection and the maximum of the half below it).
_SORTED_WIDTH = 256


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
    its window (the mean of the middle two for an even window), so computing a range in
    pieces gives the same numbers as in one go.

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
    if n < width:  # every window is a prefix: [0, 2i+1) at the start, [0, n) after
        lengths = np.minimum(2 * np.arange(lo, hi) + 1, n)
        out[:] = _prefix_medians(y, lengths)
        return out
    mid_lo, mid_hi = max(lo, half), min(hi, n - half)
    if mid_hi > mid_lo:
        _full_windows(y, half, mid_lo, mid_hi, out[mid_lo - lo : mid_hi - lo])
    if lo < half:  # the start: windows [0, 2i+1)
        top = min(hi, half)
        out[: top - lo] = _prefix_medians(y, 2 * np.arange(lo, top) + 1)
    if hi > n - half:  # the end: the last full window
        first = max(lo, n - half)
        out[first - lo :] = _middle_pair(np.sort(y[n - width :]), width)
    return out


def _full_windows(y: np.ndarray, half: int, a: int, b: int, out: np.ndarray) -> None:
    """Medians of the full windows centred at ``a..b`` into ``out``.

    Neighbouring windows share most of their points, so a group of them sorts what they
    share once (:func:`_six_windows_of`, or :func:`_pairs_of` for narrow windows) and finds
    each one's median from the few points it adds. Groups are worked out in pieces, in small
    buffers that stay in cache, so no temporary grows with the series.
    """
    if half == 0:
        out[:] = y[a:b]
        return
    windows_of = _six_windows_of if half >= _SIX_FROM else _pairs_of
    windows_of(y, half, a, b, out)


def _pairs_of(y: np.ndarray, half: int, a: int, b: int, out: np.ndarray) -> None:
    """:func:`_full_windows` on one thread, two windows at a time.

    Two neighbouring windows share ``2*half`` points: their order statistics ``half - 1``
    and ``half`` give both medians (the one point each window adds lands between them or
    is clipped to them).
    """
    core = 2 * half
    pairs = (b - a) // 2
    rows = max(1, min(pairs, _BUFFER_ELEMENTS // core))
    buffer = np.empty((rows, core))
    for p in range(0, pairs, rows):
        m = min(rows, pairs - p)
        i = a + 2 * p  # the pair's first window is centred at i, its second at i + 1
        shared = buffer[:m]
        np.copyto(shared, sliding_window_view(y[i - half + 1 : i + half + 2 * m - 1], core)[::2])
        shared.sort(axis=1)
        low, high = shared[:, half - 1], shared[:, half]
        np.clip(y[i - half : i - half + 2 * m : 2], low, high, out=out[2 * p : 2 * p + 2 * m : 2])
        np.clip(y[i + half + 1 : i + half + 1 + 2 * m : 2], low, high, out=out[2 * p + 1 : 2 * p + 2 * m : 2])
    if (b - a) % 2:  # one window left over
        out[-1] = _middle_pair(np.sort(y[b - 1 - half : b + half]), 2 * half + 1)


#: Windows this wide (half-widths) or wider go six at a time.
_SIX_FROM = 5


def _six_windows_of(y: np.ndarray, half: int, a: int, b: int, out: np.ndarray) -> None:
    """:func:`_full_windows` on one thread, six windows at a time.

    Six neighbouring windows share ``2*half - 4`` points (16 for the 21-point window:
    numpy sorts rows of up to 16 in vector registers, several times faster than rows of
    20). Window ``j`` of six adds the last ``5 - j`` of the five points before the
    shared ones (``L``) and the first ``j`` of the five after them (``R``). Its median is
    order statistic ``half`` of the shared points and those five, found by adding the five
    one at a time to the band of order statistics ``half - 5 .. half`` of the shared
    points (:func:`_add_point`: each point added narrows the band by one). Windows 0-2
    add ``L2, L3, L4`` first and windows 3-5 ``R0, R1, R2``, once for the three.
    """
    core = 2 * half - 4
    groups = (b - a) // 6
    rows = max(1, min(groups, _BUFFER_ELEMENTS // core))
    shared = np.empty((rows, core))
    start, bands, ends = np.empty((6, rows)), np.empty((2, 5, rows)), np.empty((10, rows))
    for g in range(0, groups, rows):
        m = min(rows, groups - g)
        i = a + 6 * g  # the group's first window is centred at i
        rows_ = shared[:m]
        np.copyto(rows_, sliding_window_view(y[i + 5 - half : i + half + 6 * m - 5], core)[::6])
        rows_.sort(axis=1)
        np.copyto(start[:, :m], rows_[:, half - 5 : half + 1].T)
        np.copyto(ends[:5, :m], sliding_window_view(y[i - half : i - half + 6 * m - 1], 5)[::6].T)
        np.copyto(ends[5:, :m], sliding_window_view(y[i + half + 1 : i + half + 6 * m], 5)[::6].T)
        left, right = ends[:5, :m], ends[5:, :m]
        for first, common, own in ((0, left[2:5], ((left[0], left[1]), (left[1], right[0]), (right[0], right[1]))),
                                   (3, right[0:3], ((left[3], left[4]), (left[4], right[3]), (right[3], right[4])))):
            band = start[:, :m]
            for k, x in enumerate(common):
                band = _add_point(band, x, bands[k % 2, :, :m])
            for j, (x1, x2) in enumerate(own):
                low, high = _add_point(band, x1, bands[1, :, :m])
                median = out[6 * g + first + j : 6 * (g + m) : 6]
                np.maximum(x2, low, out=median)
                np.minimum(median, high, out=median)
    for c in range(a + 6 * groups, b):  # up to five windows left over
        out[c - a] = np.sort(y[c - half : c + half + 1])[half]


def _add_point(band: np.ndarray, x: np.ndarray, into: np.ndarray) -> np.ndarray:
    """Order statistics ``r+1 .. r+k`` of a set with ``x`` added, from its statistics
    ``r .. r+k`` (rows of ``band``), into the first ``k`` rows of ``into``: statistic
    ``r+1+i`` is ``x`` held between statistics ``r+i`` and ``r+i+1``."""
    k = len(band) - 1
    for i in range(k):
        np.maximum(x, band[i], out=into[i])
        np.minimum(into[i], band[i + 1], out=into[i])
    return into[:k]


def _middle_pair(ordered: np.ndarray, size: int) -> float:
    """The median of the first ``size`` values of a sorted array, as ``np.median`` gives it."""
    k = size // 2
    if size % 2:
        return ordered[k]
    return (ordered[k - 1] + ordered[k]) / 2


def _prefix_medians(y: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The median of ``y[:m]`` for each ``m`` of ``lengths`` (each at least 1)."""
    unique, where = np.unique(lengths, return_inverse=True)
    top = int(unique[-1])
    if len(unique) * top > _PIECE_ELEMENTS:
        medians = np.array([_middle_pair(np.sort(y[:m]), int(m)) for m in unique])
        return medians[where]
    inside = np.arange(top)[None, :] < unique[:, None]
    grid = np.where(inside, y[:top][None, :], np.inf)  # what lies past a prefix sorts last
    grid.sort(axis=1)
    rows, k = np.arange(len(unique)), unique // 2
    odd = grid[rows, k]
    even = (grid[rows, np.maximum(k - 1, 0)] + odd) / 2
    return np.where(unique % 2 == 1, odd, even)[where]


def row_medians(block: np.ndarray) -> np.ndarray:
    """``np.median(block, axis=1)`` of finite rows, worked out a few rows at a time in one small
    buffer (no temporary grows with ``block``)."""
    rows, width = block.shape
    out = np.empty(rows)
    if not rows or not width:
        out[:] = np.nan
        return out
    step = max(1, min(rows, _BUFFER_ELEMENTS // width))
    buffer = np.empty((step, width))
    for a in range(0, rows, step):
        part = buffer[: min(step, rows - a)]
        np.copyto(part, block[a : a + len(part)])
        out[a : a + len(part)] = medians_in_place(part)
    return out


def medians_in_place(part: np.ndarray) -> np.ndarray:
    """The median of each row of ``part`` (finite values), reordering the rows to find it."""
    width = part.shape[1]
    k = width // 2
    if width % 2:
        part.partition(k, axis=1)
        return part[:, k].copy()
    if width <= _SORTED_WIDTH:  # the two middle order statistics, read off sorted rows
        part.sort(axis=1)
        return (part[:, k - 1] + part[:, k]) / 2
    part.partition(k, axis=1)  # one order statistic: numpy's vectorised selection
    return (part[:, :k].max(axis=1) + part[:, k]) / 2  # the one below is the largest before it


def level_wander(level: np.ndarray) -> float:
    """How far levels (block medians, in order) wander by themselves: the robust sigma of
    their differences over 1, 2, 4, ... levels (up to an eighth of them), the largest. Noise
    that is correlated from point to point (AR-like) moves a level further than its points'
    noise over the root of their count says, and the spread at a lag as long as that
    correlation shows it; a steady trend shifts every difference alike, which the spread
    about their median leaves out."""
    wander, lag = 0.0, 1
    while lag <= max(1, len(level) // 8) and len(level) - lag >= 4:
        wander = max(wander, float(mad_sigma(level[lag:] - level[:-lag])) / math.sqrt(2))
        lag *= 2
    return wander


def median(values: np.ndarray) -> float:
    """``float(np.median(values))`` of a 1-D array, to the bit, without its generic machinery.

    A series' analysis takes hundreds of medians of a few dozen values each, where
    ``np.median``'s own dispatch costs more than the selection. NaN anywhere gives NaN,
    and an empty array NaN, as ``np.median`` does (without its warning).
    """
    n = len(values)
    if not n:
        return math.nan
    h = n // 2
    if values.dtype.kind == "f":
        part = np.partition(values, (h - 1, h, n - 1) if n % 2 == 0 else (h, n - 1))
        if part[-1] != part[-1]:  # NaN sorts last
            return math.nan
    else:
        part = np.partition(values, (h - 1, h) if n % 2 == 0 else h)
    if n % 2:
        return float(part[h])
    return float((part[h - 1] + part[h]) / 2)


def mad_sigma(values: np.ndarray) -> float:
    """``MAD_SCALE * median(|values - median(values)|)``: the Gaussian-scaled MAD of a 1-D array."""
    return MAD_SCALE * median(np.abs(values - median(values)))


def robust_sigma(values: np.ndarray) -> float:
    """MAD-based standard deviation of finite values (0 for fewer than 2)."""
    values = values[np.isfinite(values)]
    if len(values) < 2:
        return 0.0
    return mad_sigma(values)


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
        self.m = m = len(x)
        if not np.isfinite(x).all():  # float signs: a window holding a NaN (and those past it) is NaN
            sign = np.triu(np.sign(x[None, :] - x[:, None]), 1)
            cum = np.zeros((m + 1, m + 1))
        else:  # the same signs as small integers: the prefix sums are exact and far cheaper
            sign = (x[None, :] > x[:, None]).astype(np.int32)
            sign -= x[None, :] < x[:, None]
            sign[np.tril_indices(m)] = 0
            cum = np.zeros((m + 1, m + 1), np.int32 if m < 60_000 else np.int64)
        np.cumsum(sign, 0, out=sign)
        np.cumsum(sign, 1, out=cum[1:, 1:])
        self._cum = cum

    def s(self, a: int, b: int) -> float:
        """S over pairs ``a <= i < j < b``."""
        c = self._cum
        return float(c[b, b] - c[a, b] - c[b, a] + c[a, a])

    def s_many(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """:meth:`s` of many windows ``[a, b)`` at once."""
        c = self._cum
        return c[b, b] - c[a, b] - c[b, a] + c[a, a]


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


def kendall_scores(s: np.ndarray, n: np.ndarray, inflation: float = 1.0) -> np.ndarray:
    """:func:`kendall_z` of many windows at once (``s`` and ``n`` arrays)."""
    n = np.asarray(n, dtype=np.int64)
    var = n * (n - 1) * (2 * n + 5) / 18.0 * inflation
    root = np.sqrt(np.where(n >= 3, var, 1.0))
    z = np.where(s > 0, (s - 1) / root, np.where(s < 0, (s + 1) / root, 0.0))
    return np.where(n >= 3, z, 0.0)


class PairSlopes:
    """Theil-Sen slopes of any window ``[a, b)`` of one series, from its pairwise slopes
    worked out once (``x`` strictly increasing)."""

    __slots__ = ("_x", "_y", "_slopes")

    def __init__(self, x: np.ndarray, y: np.ndarray) -> None:
        self._x, self._y = x, y
        self._slopes: np.ndarray | None = None  # worked out at the first window asked for

    def median(self, a: int, b: int) -> float:
        """``theil_sen(x[a:b], y[a:b])``."""
        if b - a < 2:
            return 0.0
        if self._slopes is None:
            x, y = self._x, self._y
            with np.errstate(divide="ignore", invalid="ignore"):
                self._slopes = (y[None, :] - y[:, None]) / (x[None, :] - x[:, None])
        i, j = _upper_pairs(b - a)
        return median(self._slopes[a:b, a:b][i, j])


@functools.lru_cache(maxsize=32)
def _upper_pairs(n: int) -> tuple[np.ndarray, np.ndarray]:
    return np.triu_indices(n, 1)


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
