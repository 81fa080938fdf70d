"""Downsampling for a chart W columns wide: per column min, max and last, never dropping a spike.

:func:`minmax_columns` does it in one pass over the points in range.
:class:`ColumnIndex` keeps per-block minima and maxima of a growing series (O(new points)
per update) and answers the same question in time independent of the number of points
(about ``W * 2 * 31 * levels`` element reads), so the live chart can ask every frame.

Column layout (shared by both, so they agree exactly): ``column_edges`` gives ``W + 1``
edges; a point belongs to column ``k`` when ``edges[k] <= step < edges[k+1]``, and the last
column also takes ``step == x_hi``. On a log axis the edges are evenly spaced in
``log10(step)``. A step of 0 (or below) has no logarithm: such points, when inside
``[x_lo, x_hi]``, go to the first column. If ``x_lo <= 0`` on a log axis, the axis starts
at the smallest positive step in range (or ``x_hi / 10`` if there is none).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

_FANOUT = 32
#: Up to this many points, one pass over them answers a query sooner than the block levels.
_DIRECT_POINTS = 16_384


@dataclass(frozen=True, slots=True, eq=False)
class ColumnData:
    """What to draw in each of ``width`` chart columns.

    Attributes:
        x: column centres in step units (geometric centre on a log axis).
        edges: the ``width + 1`` column edges in step units.
        min: smallest finite value in the column (NaN if none).
        max: largest finite value in the column (NaN if none).
        last: last finite value in the column, in step order (NaN if none).
        count: number of points in the column (finite or not).
        nonfinite: True where a NaN or Inf value fell in the column.
    """

    x: np.ndarray
    edges: np.ndarray
    min: np.ndarray
    max: np.ndarray
    last: np.ndarray
    count: np.ndarray
    nonfinite: np.ndarray

    @property
    def width(self) -> int:
        return len(self.x)


def column_edges(x_lo: float, x_hi: float, width: int, log_x: bool, min_positive: float | None = None) -> np.ndarray:
    """The ``width + 1`` column edges over ``[x_lo, x_hi]`` (see the module notes).

    Args:
        x_lo: left end of the axis, in steps.
        x_hi: right end of the axis, in steps.
        width: number of columns (at least 1).
        log_x: evenly spaced in ``log10(step)`` instead of ``step``.
        min_positive: smallest positive step in range, used when ``x_lo <= 0`` on a log axis.
    """
    width = max(1, int(width))
    x_lo, x_hi = float(x_lo), float(x_hi)
    if x_hi < x_lo:
        x_lo, x_hi = x_hi, x_lo
    if not log_x:
        if x_hi == x_lo:
            edges = np.full(width + 1, x_lo)
        else:
            edges = x_lo + (x_hi - x_lo) * (np.arange(width + 1) / width)
    else:
        start = x_lo if x_lo > 0 else (min_positive if min_positive and min_positive > 0 else None)
        if start is None or start > x_hi or x_hi <= 0:
            start = x_hi / 10 if x_hi > 0 else 1.0
        top = max(x_hi, start)
        a, b = math.log10(start), math.log10(top)
        edges = np.power(10.0, a + (b - a) * (np.arange(width + 1) / width))
    edges[0] = x_lo
    edges[-1] = x_hi
    return edges


@lru_cache(maxsize=64)
def _layout(x_lo: float, x_hi: float, width: int, log_x: bool, min_positive: float | None) -> tuple[np.ndarray, np.ndarray]:
    """Column edges and centres, shared read-only by every curve asked the same question."""
    edges = column_edges(x_lo, x_hi, width, log_x, min_positive)
    centres = _centres(edges, log_x)
    edges.flags.writeable = centres.flags.writeable = False
    return edges, centres


def _column_bounds(steps: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Index where each column starts in sorted ``steps``; the last entry ends the last column."""
    bounds = np.searchsorted(steps, edges, side="left")
    bounds[-1] = np.searchsorted(steps, edges[-1], side="right")
    # Edges are non-decreasing, so bounds are too; guard against rounding anyway.
    return np.maximum.accumulate(bounds)


def _centres(edges: np.ndarray, log_x: bool) -> np.ndarray:
    lo, hi = edges[:-1], edges[1:]
    if log_x:
        with np.errstate(invalid="ignore"):
            centre = np.sqrt(np.where(lo > 0, lo, hi) * hi)
        return np.where(np.isfinite(centre), centre, hi)
    return 0.5 * (lo + hi)


def _min_positive(steps: np.ndarray, x_lo: float, x_hi: float) -> float | None:
    i = np.searchsorted(steps, max(0.0, x_lo), side="right")
    if i < len(steps) and steps[i] <= x_hi:
        return float(steps[i])
    return None


def _empty(edges: np.ndarray, log_x: bool) -> ColumnData:
    w = len(edges) - 1
    nan = np.full(w, np.nan)
    return ColumnData(_centres(edges, log_x), edges, nan, nan.copy(), nan.copy(), np.zeros(w, np.int64), np.zeros(w, bool))


def _last_finite(values: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Last finite value in each ``[start, end)``; scans back only where the last point is not finite."""
    out = np.full(len(starts), np.nan)
    has = ends > starts
    if not has.any():
        return out
    k = np.flatnonzero(has)
    tail = values[ends[k] - 1]
    ok = np.isfinite(tail)
    out[k[ok]] = tail[ok]
    for j in k[~ok]:
        seg = np.flatnonzero(np.isfinite(values[starts[j] : ends[j]]))
        if len(seg):
            out[j] = values[starts[j] + seg[-1]]
    return out


def minmax_columns(
    steps: np.ndarray, values: np.ndarray, x_lo: float, x_hi: float, width: int, log_x: bool
) -> ColumnData:
    """Per column min, max, last finite value and a non-finite flag, for points in ``[x_lo, x_hi]``.

    Args:
        steps: steps in non-decreasing order.
        values: values (NaN/Inf allowed).
        x_lo: left end of the axis.
        x_hi: right end of the axis.
        width: number of columns.
        log_x: log-spaced columns (steps <= 0 go to the first column).

    Returns:
        A :class:`ColumnData`; empty columns have NaN min/max/last.
    """
    steps = np.asarray(steps, dtype=np.float64)
    values = np.asarray(values, dtype=np.float64)
    edges = column_edges(x_lo, x_hi, width, log_x, _min_positive(steps, x_lo, x_hi) if log_x else None)
    if not len(steps):
        return _empty(edges, log_x)
    return _one_pass(steps, values, edges, _centres(edges, log_x))


def _one_pass(steps: np.ndarray, values: np.ndarray, edges: np.ndarray, centres: np.ndarray,
              bounds: np.ndarray | None = None) -> ColumnData:
    if bounds is None:
        bounds = _column_bounds(steps, edges)
    vmin, vmax, last, count, nonfinite = _fold_columns(values, bounds)
    return ColumnData(centres, edges, vmin, vmax, last, count, nonfinite)


def _fold_columns(values: np.ndarray, bounds: np.ndarray) -> tuple[np.ndarray, ...]:
    """Min, max, last finite value, count and non-finite flag of the points of each column, the
    columns starting at ``bounds[:-1]`` in ``values`` (the last one ending at ``bounds[-1]``)."""
    starts, ends = bounds[:-1], bounds[1:]
    a, b = int(bounds[0]), int(bounds[-1])
    w = len(starts)
    vmin = np.full(w, np.nan)
    vmax = np.full(w, np.nan)
    nonfinite = np.zeros(w, bool)
    if b > a:
        seg = values[a:b]
        fin = np.isfinite(seg)
        lo_src = np.where(fin, seg, np.inf)
        hi_src = np.where(fin, seg, -np.inf)
        has = ends > starts
        offs = (starts - a)[has]
        mins = np.minimum.reduceat(lo_src, offs)
        maxs = np.maximum.reduceat(hi_src, offs)
        bad = np.logical_or.reduceat(~fin, offs)
        vmin[has] = np.where(np.isfinite(mins), mins, np.nan)
        vmax[has] = np.where(np.isfinite(maxs), maxs, np.nan)
        nonfinite[has] = bad
    last = _last_finite(values, starts, ends)
    return vmin, vmax, last, (ends - starts).astype(np.int64), nonfinite


#: Points summarised at a time into the first level's blocks (no temporary the size of a series).
_BLOCK_PIECE = 1 << 16


def _point_blocks(raw: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Min and max of the finite values (inf and -inf where none) and a non-finite flag of
    each ``size`` points of ``raw`` (a whole number of blocks), a piece at a time."""
    count = len(raw) // size
    mins, maxs, bad = np.empty(count), np.empty(count), np.empty(count, bool)
    step = max(1, _BLOCK_PIECE // size)
    for a in range(0, count, step):
        b = min(count, a + step)
        piece = raw[a * size : b * size]
        fin = np.isfinite(piece)
        if fin.all():
            blocks = piece.reshape(-1, size)
            mins[a:b], maxs[a:b], bad[a:b] = blocks.min(axis=1), blocks.max(axis=1), False
        else:
            mins[a:b] = np.where(fin, piece, np.inf).reshape(-1, size).min(axis=1)
            maxs[a:b] = np.where(fin, piece, -np.inf).reshape(-1, size).max(axis=1)
            bad[a:b] = (~fin).reshape(-1, size).any(axis=1)
    return mins, maxs, bad


class ColumnIndex:
    """Incremental per-column min/max for a growing series in step order.

    Keeps, for blocks of 32, 1024, 32768, ... points, the block min, max and a
    non-finite flag. :meth:`sync` costs O(new points) amortised; :meth:`query` reads
    at most about ``2 * 31`` entries per level per column, so its cost does not grow
    with the number of points (beyond a ``log`` for locating the columns). Its
    min/max/last/count/nonfinite equal :func:`minmax_columns` on the same points.

    The index does not copy the points: it keeps the arrays last given to
    :meth:`sync` (such as the store's visible arrays) and builds its blocks from them.
    """

    def __init__(self) -> None:
        self._steps = np.empty(0)
        self._values = np.empty(0)
        self._key: object = None
        self._mins: list[np.ndarray] = []  # per level: block minima (inf where no finite value)
        self._maxs: list[np.ndarray] = []
        self._bad: list[np.ndarray] = []
        self._min_pos: float | None = None
        #: How many times the index had to start over (the data changed, not just grew).
        self.rebuilds = 0
        # The last query and its answer: a redraw asks every unchanged curve the same again.
        self._last_query: tuple | None = None
        self._last_answer: ColumnData | None = None
        # The last answer computed, with the column layout and bounds it was read from: once the
        # points only grew, a query on the same layout works out again only the columns whose
        # bounds moved (a followed run: its last column or two), not every column's points.
        self._grown_from: tuple[np.ndarray, np.ndarray, ColumnData] | None = None
        #: How many queries were answered by working out only the columns the new points reached.
        self.partial_queries = 0

    def __len__(self) -> int:
        return len(self._steps)

    def sync(self, steps: np.ndarray, values: np.ndarray, key: object = None) -> None:
        """Catch up with the current arrays: extend if they only grew, else rebuild.

        Args:
            steps: all steps, non-decreasing (e.g. ``Series.visible()[0]``).
            values: the matching values.
            key: anything that changes when earlier points may have changed, such as
                the number of segments of the series; a new key forces a rebuild.
        """
        steps = np.asarray(steps, dtype=np.float64)
        values = np.asarray(values, dtype=np.float64)
        n = len(self._steps)
        grew = (
            key == self._key
            and len(steps) >= n
            and (n == 0 or (steps[n - 1] == self._steps[n - 1] and _same(values[n - 1], self._values[n - 1])))
            and (n == 0 or steps[0] == self._steps[0])
        )
        if not grew:
            self.rebuilds += n > 0
            self._mins, self._maxs, self._bad = [], [], []
            self._min_pos = None
            self._grown_from = None
            n = 0
        if not grew or len(steps) != n:
            self._last_query = None
        self._key = key
        self._steps, self._values = steps, values
        self._grow(n)

    def _grow(self, old: int) -> None:
        steps, values = self._steps, self._values
        n = len(steps)
        if n > old:
            new_steps = steps[old:]
            pos = new_steps[new_steps > 0]
            if len(pos):
                first = float(pos[0])
                self._min_pos = first if self._min_pos is None else min(self._min_pos, first)
        size = _FANOUT
        level = 0
        while n // size >= 1:
            complete = n // size
            if level >= len(self._mins):
                self._mins.append(np.empty(0))
                self._maxs.append(np.empty(0))
                self._bad.append(np.empty(0, bool))
            have = len(self._mins[level])
            if complete > have:
                if level == 0:
                    new_min, new_max, new_bad = _point_blocks(values[have * size : complete * size], size)
                else:
                    a, b = have * _FANOUT, complete * _FANOUT
                    new_min = self._mins[level - 1][a:b].reshape(-1, _FANOUT).min(axis=1)
                    new_max = self._maxs[level - 1][a:b].reshape(-1, _FANOUT).max(axis=1)
                    new_bad = self._bad[level - 1][a:b].reshape(-1, _FANOUT).any(axis=1)
                self._mins[level] = np.concatenate((self._mins[level], new_min))
                self._maxs[level] = np.concatenate((self._maxs[level], new_max))
                self._bad[level] = np.concatenate((self._bad[level], new_bad))
            size *= _FANOUT
            level += 1

    def query(self, x_lo: float, x_hi: float, width: int, log_x: bool) -> ColumnData:
        """Per column min, max, last and non-finite flag, exactly as :func:`minmax_columns`.

        The same question with no new points since returns the same (unmodified) answer.
        """
        asked = (x_lo, x_hi, width, log_x)
        if asked == self._last_query and self._last_answer is not None:
            return self._last_answer
        answer = self._query(x_lo, x_hi, width, log_x)
        for array in (answer.x, answer.edges, answer.min, answer.max, answer.last, answer.count, answer.nonfinite):
            array.flags.writeable = False  # it may be handed out again
        self._last_query, self._last_answer = asked, answer
        return answer

    def _query(self, x_lo: float, x_hi: float, width: int, log_x: bool) -> ColumnData:
        steps, values = self._steps, self._values
        min_pos = None
        if log_x:
            if x_lo <= 0 and self._min_pos is not None and self._min_pos <= x_hi:
                min_pos = self._min_pos
            else:
                min_pos = _min_positive(steps, x_lo, x_hi)
        edges, centres = _layout(float(x_lo), float(x_hi), int(width), bool(log_x), min_pos)
        grown_from, self._grown_from = self._grown_from, None
        if not len(steps):
            return _empty(edges, log_x)
        bounds = _column_bounds(steps, edges)
        answer = self._grown(values, edges, bounds, grown_from) if grown_from is not None else None
        if answer is None:
            answer = (_one_pass(steps, values, edges, centres, bounds) if len(steps) <= _DIRECT_POINTS
                      else self._levels(values, edges, centres, bounds))
        self._grown_from = (edges, bounds, answer)
        return answer

    def _grown(self, values: np.ndarray, edges: np.ndarray, bounds: np.ndarray,
               was: tuple[np.ndarray, np.ndarray, ColumnData]) -> ColumnData | None:
        """The answer on the layout ``edges`` of the last one computed, ``was``, from its columns
        whose bounds did not move (the points only grew since: those columns hold the same points)
        and the columns from the first one that moved read again; None when the layout changed or
        the columns to read again hold too many points."""
        old_edges, old_bounds, old = was
        if old_edges is not edges and not np.array_equal(old_edges, edges):
            return None
        moved = np.flatnonzero((bounds[:-1] != old_bounds[:-1]) | (bounds[1:] != old_bounds[1:]))
        if not len(moved):
            return old
        k = int(moved[0])
        if bounds[-1] - bounds[k] > _DIRECT_POINTS:
            return None
        vmin, vmax, last, count, bad = (old.min.copy(), old.max.copy(), old.last.copy(), old.count.copy(),
                                        old.nonfinite.copy())
        vmin[k:], vmax[k:], last[k:], count[k:], bad[k:] = _fold_columns(values, bounds[k:])
        self.partial_queries += 1
        return ColumnData(old.x, old.edges, vmin, vmax, last, count, bad)

    def _levels(self, values: np.ndarray, edges: np.ndarray, centres: np.ndarray,
                bounds: np.ndarray) -> ColumnData:
        """Every column's answer from the blocks of the levels and the points at their ends."""
        starts, ends = bounds[:-1].astype(np.int64), bounds[1:].astype(np.int64)
        w = len(starts)
        vmin = np.full(w, np.inf)
        vmax = np.full(w, -np.inf)
        bad = np.zeros(w, bool)
        a, b = starts.copy(), ends.copy()
        size = 1
        levels = len(self._mins) + 1  # level 0 is the raw points
        for level in range(levels):
            up = size * _FANOUT
            if level + 1 < levels:
                ua = -(-a // up) * up  # first point covered by a whole block of the next level
                ub = (b // up) * up
                inner = ua < ub
            else:
                ua = ub = b
                inner = np.zeros(w, bool)
            head_hi = np.where(inner, ua, b)
            tail_lo = np.where(inner, ub, b)
            for lo_idx, hi_idx in ((a, head_hi), (tail_lo, b)):
                self._fold(level, lo_idx // size, hi_idx // size, vmin, vmax, bad)
            if not inner.any():
                break
            a = np.where(inner, ua, b)
            b = np.where(inner, ub, b)
            size = up
        vmin = np.where(np.isfinite(vmin), vmin, np.nan)
        vmax = np.where(np.isfinite(vmax), vmax, np.nan)
        last = _last_finite(values, starts, ends)
        return ColumnData(centres, edges, vmin, vmax, last, (ends - starts).astype(np.int64), bad)

    def _fold(self, level: int, lo: np.ndarray, hi: np.ndarray, vmin: np.ndarray, vmax: np.ndarray, bad: np.ndarray) -> None:
        """Fold entries ``lo[k]:hi[k]`` of ``level`` into column ``k`` (short ranges, gathered)."""
        lengths = np.maximum(hi - lo, 0)
        k = np.flatnonzero(lengths)
        if not len(k):
            return
        lengths = lengths[k]
        offsets = np.concatenate(([0], np.cumsum(lengths)[:-1]))
        idx = np.repeat(lo[k] - offsets, lengths) + np.arange(int(lengths.sum()))
        if level == 0:
            raw = self._values[idx]
            fin = np.isfinite(raw)
            src_min = np.where(fin, raw, np.inf)
            src_max = np.where(fin, raw, -np.inf)
            src_bad = ~fin
        else:
            src_min = self._mins[level - 1][idx]
            src_max = self._maxs[level - 1][idx]
            src_bad = self._bad[level - 1][idx]
        vmin[k] = np.minimum(vmin[k], np.minimum.reduceat(src_min, offsets))
        vmax[k] = np.maximum(vmax[k], np.maximum.reduceat(src_max, offsets))
        bad[k] |= np.logical_or.reduceat(src_bad, offsets)


def _same(a: float, b: float) -> bool:
    return a == b or (math.isnan(a) and math.isnan(b))
