"""What the chart draws, computed from the series without any UI.

Plain numpy and dataclasses: the step window (zoom), the log transform (log10
values on a linear axis, never a log scale of the renderer's own), tick positions and
labels, and the :class:`ChartSpec` that the
:class:`~tuiloss.ui.widgets.loss_chart.LossChart` widget rasterises
(:mod:`tuiloss.ui.canvas`).
Downsampling and smoothing come from :mod:`tuiloss.core.analysis`: each curve
arrives as per-column min/max/last (:class:`~tuiloss.core.analysis.ColumnData`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np

from tuiloss.core.analysis import ColumnData, ema, minmax_columns  # noqa: F401  (ema re-exported)
from tuiloss.core.analysis.display import fmt_value, step_label

#: Smoothing weights ``s`` cycles through (TensorBoard-style EMA).
SMOOTHING_STEPS = (0.0, 0.6, 0.9, 0.99)
#: The glyph of a configuration's min-max band without braille and colour (--ascii, NO_COLOR).
BAND_GLYPHS = ("░", ":")
#: How far a band's colour is mixed toward the background: a lighter shade of its curve's.
BAND_FADE = 0.6
#: Which anomaly kinds get a mark on the curve, and with which glyph (unicode, ascii).
ANOMALY_GLYPHS = {
    "spike": ("▲", "^"),
    "divergence": ("↑", "!"),
    "drift": ("↗", "/"),
    "nan": ("×", "X"),
    "reset": ("↺", "R"),
    "stall": ("‖", "="),
}


def nice_step(span: float, count: int) -> float:
    """A 1/2/5 x 10^k spacing giving close to ``count`` intervals over ``span``."""
    if span <= 0 or not math.isfinite(span):
        return 1.0
    raw = span / max(count, 1)
    power = 10 ** math.floor(math.log10(raw))
    candidates = [mult * power for mult in (1, 2, 5, 10)]
    return min(candidates, key=lambda step: abs(span / step - count))


def linear_ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    """Round tick positions inside ``[lo, hi]``."""
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi <= lo:
        return [lo] if math.isfinite(lo) else []
    spacing = nice_step(hi - lo, count)
    first = math.ceil(lo / spacing - 1e-9) * spacing
    ticks = []
    value = first
    while value <= hi + spacing * 1e-9 and len(ticks) < 50:
        ticks.append(round(value, 12))
        value += spacing
    return ticks


def log_ticks(lo: float, hi: float, max_ticks: int = 8) -> list[float]:
    """Tick values (not logs) for a log10 axis spanning ``10**lo .. 10**hi``.

    Whole decades when the range holds at least two; otherwise 1-2-5 (and then
    every digit) inside each decade so a zoomed axis still has labels.
    """
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi < lo:
        return []
    for mults in ((1,), (1, 2, 5), (1, 2, 3, 4, 5, 6, 7, 8, 9)):
        ticks = []
        for decade in range(math.floor(lo) - 1, math.ceil(hi) + 1):
            for mult in mults:
                value = mult * 10.0**decade
                if lo - 1e-9 <= math.log10(value) <= hi + 1e-9:
                    ticks.append(value)
        if len(ticks) >= 2:
            if len(ticks) > max_ticks:
                stride = math.ceil(len(ticks) / max_ticks)
                # Thinned from the top, so the last decade (the latest steps) keeps its label.
                ticks = ticks[::-1][::stride][::-1]
            return ticks
    return ticks


def tick_labels(values: list[float]) -> list[str]:
    """Labels of evenly spaced linear ticks, all with the same number of decimals."""
    if len(values) < 2:
        return [fmt_value(v) for v in values]
    spacing = min(abs(b - a) for a, b in zip(values, values[1:]))
    if not spacing or not math.isfinite(spacing) or max(abs(v) for v in values) >= 1e5 or spacing < 1e-4:
        return [fmt_value(v) for v in values]
    decimals = max(0, -math.floor(math.log10(spacing) + 1e-9))
    return [f"{v:.{decimals}f}" for v in values]


# -- the chart's specification ---------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ChartView:
    """How the user asked to see the chart (keys change these)."""

    log_x: bool = True
    log_y: bool | None = None  # None: log when the data spans more than a decade
    smoothing: float = 0.0
    zoom: int = 0  # 0 = everything; each level halves the step range, anchored at the latest step
    show_eval: bool = False
    cursor: float | None = None  # a step
    ascii: bool = False
    no_color: bool = False
    events: bool = False  # the runs' events marked (``t``: see tuiloss.ui.eventmarks)

    @property
    def plain(self) -> bool:
        """Runs are told apart by markers, not colours (``--ascii`` or ``NO_COLOR``)."""
        return self.ascii or self.no_color


@dataclass(slots=True)
class Mark:
    """A finding to mark on a curve."""

    kind: str
    step: float
    value: float | None
    end_step: float | None = None


@dataclass(slots=True)
class Trace:
    xs: Sequence[float]  # a list, or a read-only float64 array
    ys: Sequence[float]
    color: tuple[int, int, int] | str
    marker: str
    kind: str = "line"  # line | scatter | band (filled between each column's min and max, under the curves)


@dataclass(slots=True)
class Label:
    text: str
    x: float
    y: float
    color: tuple[int, int, int] | str
    alignment: str = "center"


@dataclass(slots=True)
class ChartSpec:
    """Plot instructions: traces drawn in order, text labels, vertical lines, limits, ticks."""

    traces: list[Trace] = field(default_factory=list)
    labels: list[Label] = field(default_factory=list)
    vlines: list[tuple[float, tuple[int, int, int] | str]] = field(default_factory=list)
    x_lim: tuple[float, float] = (0.0, 1.0)
    y_lim: tuple[float, float] = (0.0, 1.0)
    x_ticks: tuple[list[float], list[str]] = ([], [])
    y_ticks: tuple[list[float], list[str]] = ([], [])
    title: str = ""
    empty: str | None = None  # a message instead of a chart
    x_log: bool = False  # x positions are log10(step)
    y_log: bool = False  # y positions are log10(value)
    ascii: bool = False  # frame and marks in ASCII only
    notes: list[str] = field(default_factory=list)
    newest_step: float | None = None  # the latest step drawn (the x axis may end a little past it)
    #: events (x, colour, glyph, place): ``line`` a thin dotted vertical line topped by the glyph,
    #: ``top`` / ``bottom`` the glyph alone on the top / bottom row
    event_marks: list[tuple[float, tuple[int, int, int] | str, str, str]] = field(default_factory=list)


def next_smoothing(current: float) -> float:
    """The smoothing after ``current`` in :data:`SMOOTHING_STEPS`, back to none after the last."""
    later = [w for w in SMOOTHING_STEPS if w > current + 1e-9]
    return later[0] if later else 0.0


def moved_cursor(spec: ChartSpec, cursor: float | None, columns: int, width: int) -> float | None:
    """The step cursor moved by ``columns`` of a ``width``-column plot (from the right edge if unset).

    ``None`` when the chart is empty: there is nowhere to put a cursor.
    """
    if spec.empty:
        return None
    lo, hi = spec.x_lim
    hi = min(hi, _newest_x(spec))  # the axis may end a little past the latest step
    if cursor is None:
        x = hi
    else:
        x = math.log10(cursor) if spec.x_log and cursor > 0 else (lo if spec.x_log else cursor)
        x += columns * (hi - lo) / max(width, 1)
    x = min(max(x, lo), hi)
    return 10**x if spec.x_log else x


def edge_step(spec: ChartSpec, end: bool) -> float | None:
    """The step at the chart's left edge (its right one if ``end``); ``None`` when it is empty."""
    if spec.empty:
        return None
    x = min(spec.x_lim[1], _newest_x(spec)) if end else spec.x_lim[0]
    return 10**x if spec.x_log else x


def _newest_x(spec: ChartSpec) -> float:
    """Where the latest step drawn is on the x axis (its end when the spec does not say)."""
    step = spec.newest_step
    if step is None:
        return spec.x_lim[1]
    if spec.x_log:
        return math.log10(step) if step > 0 else spec.x_lim[0]
    return step


def fade(color: tuple[int, int, int], background: tuple[int, int, int], amount: float = 0.55) -> tuple[int, int, int]:
    """``color`` mixed toward ``background`` by ``amount`` (the raw curve behind a smoothed one)."""
    return tuple(int(round(c + (b - c) * amount)) for c, b in zip(color, background))  # type: ignore[return-value]


ColumnQuery = Callable[[float, float, int, bool], ColumnData]


@dataclass(slots=True)
class CurveInput:
    """One run's data for the chart.

    ``raw`` (and ``smoothed``) answer "per-column min/max/last over steps
    ``[x_lo, x_hi]`` in ``width`` columns, log-spaced or not" -- a
    :class:`~tuiloss.core.analysis.ColumnIndex` query in the app, so a frame costs
    O(width) whatever the number of points.
    """

    key: str
    color: tuple[int, int, int]
    marker: str  # ascii marker used with --ascii / NO_COLOR
    first_step: float
    last_step: float
    min_positive: float | None  # smallest positive step, for the log axis
    raw: ColumnQuery
    smoothed: ColumnQuery | None = None
    eval_steps: np.ndarray | None = None
    eval_values: np.ndarray | None = None
    marks: list[Mark] = field(default_factory=list)
    segment_starts: list[tuple[float, str]] = field(default_factory=list)
    has_nonpositive_steps: bool = False
    band: ColumnQuery | None = None  # a configuration's min-max spread across its runs (grouped mode, ``g``)


@dataclass(frozen=True, slots=True)
class Window:
    """The x axis: positions ``lo..hi`` (log10 steps when ``log``), and the steps they span."""

    lo: float
    hi: float
    log: bool
    step_lo: float
    step_hi: float

    def to_x(self, step: float) -> float:
        if not self.log:
            return step
        return math.log10(step) if step > 0 else self.lo

    def to_step(self, x: float) -> float:
        return 10.0**x if self.log else x


#: The x axis ends on a grid of at most 1/X_GRID of its span (a fraction of a braille column):
#: while a followed run's new steps stay inside the last grid cell the window is the same, so
#: every other curve answers the redraw from the column summary it gave last time.
X_GRID = 512
#: A followed run whose steps passed the axis' end moves it onto a grid of at most 1/FOLLOW_GRID
#: of the span (a few braille columns ahead): every curve is summarised and rasterised again when
#: the end moves, and on the fine grid that was every ~2% of the steps.
FOLLOW_GRID = 64


def rounded_end(lo: float, hi: float, grid: int = X_GRID) -> float:
    """``hi`` rounded up to a power-of-two grid finer than 1/``grid`` of ``hi - lo``."""
    span = hi - lo
    if not span > 0 or not math.isfinite(span):
        return hi
    quantum = 2.0 ** math.floor(math.log2(span / grid))
    return math.ceil(hi / quantum) * quantum


def _followed_end(lo: float, hi: float, memo: dict | None, key: tuple) -> float:
    """Where the axis ends while a run is followed: the end of the last frame while the steps are
    still inside it and it is no farther past them than the follow grid allows; past it, the next
    step of the follow grid. Any other change (where the axis starts, the zoom, the log) starts
    from the fine grid again."""
    fine = rounded_end(lo, hi)
    if memo is None:
        return fine
    before = memo.get("x end")
    end = fine
    if before is not None and before[0] == key:
        coarse = rounded_end(lo, hi, FOLLOW_GRID)
        if hi <= before[1] <= coarse:
            end = before[1]  # the steps are still inside the end drawn last
        elif hi > before[1]:
            end = coarse  # they grew past it: a few columns ahead
    memo["x end"] = (key, end)
    return end


def x_window(curves: list[CurveInput], view: ChartView, memo: dict | None = None,
             follow: bool = False) -> Window | None:
    """The step window shown: all data, or the zoomed part ending at the latest step.

    With ``follow`` (the runs are followed as they grow) and ``memo`` (kept between frames), the
    end moves ahead in steps of the follow grid (see :func:`_followed_end`).
    """
    firsts = [c.first_step for c in curves if math.isfinite(c.first_step)]
    lasts = [c.last_step for c in curves if math.isfinite(c.last_step)]
    if view.show_eval:
        for c in curves:
            if c.eval_steps is not None and len(c.eval_steps):
                firsts.append(float(c.eval_steps[0]))
                lasts.append(float(c.eval_steps[-1]))
    if not firsts:
        return None
    first, last = min(firsts), max(lasts)
    positives = [c.min_positive for c in curves if c.min_positive]
    log = view.log_x and bool(positives) and last > 0
    if log:
        # Start at the first logged step (not the decade below): no empty band on the left.
        lo = math.log10(min(positives))
        hi = math.log10(last)
    else:
        lo, hi = first, last
    if hi <= lo:
        hi = lo + (1.0 if log else max(1.0, abs(lo) * 0.1))
    if view.zoom > 0:
        lo = hi - (hi - lo) / 2**view.zoom
    hi = _followed_end(lo, hi, memo, (lo, log)) if follow and view.zoom == 0 else rounded_end(lo, hi)
    if log:
        step_lo = 0.0 if view.zoom == 0 and first <= 0 else 10.0**lo
        return Window(lo, hi, True, step_lo, 10.0**hi)
    return Window(lo, hi, False, lo, hi)


_NO_POINTS = (np.zeros(0), np.zeros(0))


def _column_points(cols: ColumnData, window: Window, log_y: bool) -> tuple[np.ndarray, np.ndarray]:
    """Two points per column (min and max, ending on the side of the column's last value)."""
    ok = np.isfinite(cols.min) & np.isfinite(cols.max)
    if log_y:
        ok &= cols.min > 0
    if not ok.any():
        return _NO_POINTS
    x = cols.x[ok]
    lows, highs, last = cols.min[ok], cols.max[ok], cols.last[ok]
    if window.log:
        with np.errstate(divide="ignore", invalid="ignore"):
            x = np.where(x > 0, np.log10(x), window.lo)
    lows, highs, last = (value_axis(a, log_y) for a in (lows, highs, last))
    ends_high = np.abs(last - highs) <= np.abs(last - lows)
    first = np.where(ends_high, lows, highs)
    second = np.where(ends_high, highs, lows)
    xs = np.repeat(x, 2)
    ys = np.empty(2 * len(x))
    ys[0::2] = first
    ys[1::2] = second
    keep = np.ones(len(xs), dtype=bool)
    keep[1::2] = first != second
    keep &= np.isfinite(ys)
    xs, ys = xs[keep], ys[keep]
    xs.flags.writeable = ys.flags.writeable = False  # a memo may hand them out again
    return xs, ys


def _points(memo: dict | None, key: tuple, cols: ColumnData, window: Window, log_y: bool):
    """:func:`_column_points`, answered from ``memo`` when ``cols`` is the very answer it saw last."""
    if memo is None:
        return _column_points(cols, window, log_y)
    seen = memo.get(key)
    if seen is not None and seen[0] is cols and seen[1] == (window, log_y):
        return seen[2]
    points = _column_points(cols, window, log_y)
    memo[key] = (cols, (window, log_y), points)
    return points


@dataclass(frozen=True, slots=True)
class _Drawn:
    """What the chart reads of one curve's column summary: its points, the values it settled to
    and their :func:`settled_bounds`, its finite extent, and where its columns hold NaN/Inf."""

    xs: np.ndarray
    ys: np.ndarray
    settled: np.ndarray | None
    bounds: tuple[float, float] | None
    extent: tuple[float, float] | None
    nonfinite: list[float]


def _drawn(memo: dict | None, key: tuple, cols: ColumnData, window: Window, log_y: bool) -> _Drawn:
    """:class:`_Drawn` of ``cols``, answered from ``memo`` when ``cols`` is the very answer it saw last
    (the curves that did not change cost a look-up)."""
    seen = memo.get(key) if memo is not None else None
    if seen is not None and seen[0] is cols and seen[1] == (window, log_y):
        return seen[2]
    xs, ys = _column_points(cols, window, log_y)
    nonfinite = [window.to_x(float(cols.x[k])) for k in np.flatnonzero(cols.nonfinite)[:200]]
    if seen is not None and seen[1] == (window, log_y) and _same_points(seen[2], xs, ys, nonfinite):
        # New points that drew the same (a followed run's last column kept its extremes and
        # side): the same object again, so the traces and their raster made of it are kept.
        drawn = seen[2]
    else:
        settled = _later_half(xs, ys, window) if len(ys) else None
        finite = ys[np.isfinite(ys)]
        drawn = _Drawn(xs, ys, settled, settled_bounds(settled) if settled is not None else None,
                       (float(finite.min()), float(finite.max())) if len(finite) else None, nonfinite)
    if memo is not None:
        memo[key] = (cols, (window, log_y), drawn)
    return drawn


def _same_points(drawn: _Drawn, xs: np.ndarray, ys: np.ndarray, nonfinite: list[float]) -> bool:
    """Whether ``drawn`` is what these points and NaN/Inf columns make (the rest of it is made of them)."""
    return (len(xs) == len(drawn.xs) and drawn.nonfinite == nonfinite and np.array_equal(xs, drawn.xs)
            and np.array_equal(ys, drawn.ys))


def _extremes(memo: dict | None, key: tuple, cols: ColumnData) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_finite_extremes` of ``cols``, from ``memo`` while it is the very answer seen last."""
    seen = memo.get(("extremes", key)) if memo is not None else None
    if seen is not None and seen[0] is cols:
        return seen[1]
    found = _finite_extremes(cols)
    if memo is not None:
        memo[("extremes", key)] = (cols, found)
    return found


def value_axis(values, log: bool):
    values = np.asarray(values, dtype=np.float64)
    if not log:
        return values
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(values > 0, np.log10(values), np.nan)


#: Visible values spanning more than this ratio (max / min, robustly) get a log y axis by default.
LOG_Y_RATIO = 10.0
#: The whole range is cut to the settled values when it is this many times wider than they are.
CLIP_RATIO = 2.5
#: Room kept beyond the settled values, as a share of their span, when the range is cut: enough
#: to see the curves arrive (which one settles first), not so much that the settled part flattens.
CLIP_MARGIN = 1.0


def spans_decades(columns: list[ColumnData]) -> bool:
    """Whether the visible values are all positive and span more than about a decade.

    Uses the 2nd percentile of the column minima and the 98th of the maxima, so one stray
    point does not switch the axis.
    """
    return _spans_decades([_finite_extremes(c) for c in columns])


def _finite_extremes(cols: ColumnData) -> tuple[np.ndarray, np.ndarray]:
    """A curve's finite column minima and maxima."""
    return cols.min[np.isfinite(cols.min)], cols.max[np.isfinite(cols.max)]


def _spans_decades(extremes: list[tuple[np.ndarray, np.ndarray]]) -> bool:
    """:func:`spans_decades` of each curve's :func:`_finite_extremes`."""
    lows = np.concatenate([low for low, _ in extremes]) if extremes else np.zeros(0)
    highs = np.concatenate([high for _, high in extremes]) if extremes else np.zeros(0)
    if not len(lows) or not len(highs) or lows.min() <= 0:
        return False
    # np.quantile interpolates between two neighbouring order statistics: those found by one
    # partition around them (a third of its cost) settle the answer unless it is a near tie.
    high_lo, high_hi = _around_quantile(highs, 0.98)
    low_lo, low_hi = _around_quantile(lows, 0.02)
    if _clearly_above(high_lo, LOG_Y_RATIO * low_hi):
        return True
    if _clearly_above(LOG_Y_RATIO * low_lo, high_hi):
        return False
    return float(np.quantile(highs, 0.98)) > LOG_Y_RATIO * float(np.quantile(lows, 0.02))


def _around_quantile(values: np.ndarray, q: float) -> tuple[float, float]:
    """Order statistics of ``values`` below and above ``np.quantile(values, q)`` (a neighbour more
    on each side than the two it interpolates between)."""
    at = math.floor(q * (len(values) - 1))
    lo, hi = max(0, at - 1), min(len(values) - 1, at + 2)
    part = np.partition(values, (lo, hi))
    return float(part[lo]), float(part[hi])


def _clearly_above(a: float, b: float) -> bool:
    """``a > b`` by more than any rounding of the quantiles' interpolation could move either."""
    return a > b + 1e-9 * (abs(a) + abs(b))


def _later_half(xs: np.ndarray, ys: np.ndarray, window: Window) -> np.ndarray:
    """A curve's values from the middle of its steps on, and its last point: what it settled to."""
    steps = 10.0**xs if window.log else xs
    middle = (steps[0] + steps[-1]) / 2
    later = ys[steps >= middle]
    return np.concatenate([later, ys[-2:]])


def settled_bounds(values: np.ndarray) -> tuple[float, float] | None:
    """One curve's settled values' 2nd and 98th percentiles, widened to its last finite value
    (``None`` if it has none): what :func:`y_range` keeps in view."""
    kept = values[np.isfinite(values)]
    if not len(kept):
        return None
    ordered = np.sort(kept)  # np.quantile's own values, read off the sorted values (see sorted_quantile)
    low, high = sorted_quantile(ordered, 0.02), sorted_quantile(ordered, 0.98)
    return min(low, float(kept[-1])), max(high, float(kept[-1]))


def y_range(seen: list[np.ndarray], settled: list[np.ndarray], log: bool,
            bounds: list[tuple[float, float] | None] | None = None,
            extents: list[tuple[float, float] | None] | None = None) -> tuple[float, float, float | None, float | None]:
    """The y limits, and the most extreme values left above and below them (``None``: nothing cut).

    On a linear axis, when all the values would squeeze the settled part of the curves into a
    few rows (the early transient of a loss is often ten times its final level), the range is
    cut to the settled values (2nd to 98th percentile of each curve's later half, and its last
    point) with some room around them; what is left out is marked. A log axis is never cut.
    ``bounds``, when given, are the :func:`settled_bounds` of ``settled``, worked out before;
    ``extents`` the finite (min, max) of each of ``seen``.
    """
    if extents is None:
        extents = [(float(a.min()), float(a.max())) if len(a) else None for a in (a[np.isfinite(a)] for a in seen)]
    extents = [e for e in extents if e is not None]
    if not extents:
        return 0.0, 1.0, None, None
    y_lo, y_hi = min(e[0] for e in extents), max(e[1] for e in extents)
    above = below = None
    if bounds is None:
        bounds = [settled_bounds(a) for a in settled] if not log else []
    bounds = [b for b in bounds if b is not None] if not log else []
    if bounds:
        body_lo = min(b[0] for b in bounds)
        body_hi = max(b[1] for b in bounds)
        body = body_hi - body_lo
        if body > 0 and (y_hi - y_lo) > CLIP_RATIO * body:
            top, bottom = body_hi + CLIP_MARGIN * body, body_lo - CLIP_MARGIN * body
            if y_hi > top:
                above, y_hi = y_hi, top
            if y_lo < bottom:
                below, y_lo = y_lo, bottom
    if y_hi - y_lo < 1e-12:
        pad = abs(y_hi) * 0.05 or 0.5
        y_lo, y_hi = y_lo - pad, y_hi + pad
    pad = (y_hi - y_lo) * 0.05
    low, high = y_lo - pad, y_hi + pad
    if not log and below is None and low < 0 <= min(e[0] for e in extents):
        low = 0.0
    return low, high, above, below


def _band_traces(curves: list[CurveInput], window: Window, columns: int, log_y: bool, view: ChartView,
                 background: tuple[int, int, int], y_seen: list[np.ndarray]) -> list[Trace]:
    """The min-max bands of the curves that have one, in a lighter shade (or a light glyph)."""
    fine = not view.ascii and not view.no_color
    traces = []
    for curve in curves:
        if curve.band is None:
            continue
        bx, by = _column_points(curve.band(window.step_lo, window.step_hi, columns, window.log), window, log_y)
        if len(by):
            y_seen.append(by)
            color = fade(curve.color, background, BAND_FADE) if fine else curve.color
            traces.append(Trace(bx, by, color, "braille" if fine else BAND_GLYPHS[1 if view.ascii else 0], kind="band"))
    return traces


@dataclass(slots=True)
class _Parts:
    """What the curves give a frame: the y scale, their traces in drawing order, and what the
    y range is worked out from (each drawn curve's finite extent and settled bounds, the first
    values drawn, the NaN/Inf columns)."""

    log_y: bool
    traces: list[Trace]
    extents: list[tuple[float, float] | None]
    bounds: list[tuple[float, float] | None]
    starts: list[float]
    nan_marks: list[tuple[float, tuple[int, int, int]]]


def _parts(curves: list[CurveInput], view: ChartView, window: Window, columns: int,
           background: tuple[int, int, int], memo: dict | None) -> _Parts:
    """:class:`_Parts` of ``curves``, each curve read again (its points from ``memo`` while unchanged)."""
    lo, hi = window.lo, window.hi
    fine = not view.ascii and not view.no_color
    raw_columns = [curve.raw(window.step_lo, window.step_hi, columns, window.log) for curve in curves]
    log_y = view.log_y if view.log_y is not None else _spans_decades(
        [_extremes(memo, (curve.key, "raw"), cols) for curve, cols in zip(curves, raw_columns)])
    y_seen: list[np.ndarray] = []
    bounds: list[tuple[float, float] | None] = []  # the settled_bounds of each curve's later half and last point
    nan_marks: list[tuple[float, tuple[int, int, int]]] = []
    raw_traces: list[Trace] = []
    eval_traces: list[Trace] = []
    main_traces: list[Trace] = []
    band_traces = _band_traces(curves, window, columns, log_y, view, background, y_seen)
    extents: list[tuple[float, float] | None] = [(float(t.ys.min()), float(t.ys.max())) for t in band_traces]
    for curve, raw_cols in zip(curves, raw_columns):
        marker = "braille" if fine else curve.marker
        drawn = _drawn(memo, (curve.key, "raw"), raw_cols, window, log_y)
        rx, ry = drawn.xs, drawn.ys
        if len(ry):
            y_seen.append(ry)
            extents.append(drawn.extent)
            bounds.append(drawn.bounds)
        if drawn.nonfinite:
            nan_marks.extend((x, curve.color) for x in drawn.nonfinite)
        if curve.smoothed is not None and view.smoothing > 0:
            if len(rx):
                raw_traces.append(Trace(rx, ry, fade(curve.color, background) if fine else curve.color,
                                        "braille" if fine else "."))
            smooth_cols = curve.smoothed(window.step_lo, window.step_hi, columns, window.log)
            sx, sy = _points(memo, (curve.key, "smoothed"), smooth_cols, window, log_y)
            if len(sx):
                main_traces.append(Trace(sx, sy, curve.color, marker))
        elif len(rx):
            main_traces.append(Trace(rx, ry, curve.color, marker))
        if view.show_eval and curve.eval_steps is not None and len(curve.eval_steps):
            ex = np.asarray([window.to_x(float(s)) for s in curve.eval_steps])
            ey = value_axis(curve.eval_values, log_y)
            keep = (ex >= lo) & (ex <= hi) & np.isfinite(ey)
            if keep.any():
                y_seen.append(ey[keep])
                extents.append((float(ey[keep].min()), float(ey[keep].max())))
                bounds.append(settled_bounds(_later_half(ex[keep], ey[keep], window)))
                eval_traces.append(Trace(ex[keep].tolist(), ey[keep].tolist(), curve.color,
                                         "●" if fine else "E", kind="scatter"))
    # bands first, under every curve; eval points last: never hidden by a curve
    return _Parts(log_y, band_traces + raw_traces + main_traces + eval_traces, extents, bounds,
                  [float(ry[0]) for ry in y_seen if len(ry)], nan_marks)


def _keyed_apart(curves: list[CurveInput]) -> bool:
    """Whether ``curves`` can be kept by key between frames: each its own key, no configuration's band."""
    return len({curve.key for curve in curves}) == len(curves) and all(curve.band is None for curve in curves)


@dataclass(slots=True)
class _Kept:
    """One curve as the last frame drew it (see :func:`_kept_parts`)."""

    curve: CurveInput
    cols: ColumnData
    drawn: _Drawn
    behind: Trace | None  # the raw curve behind a smoothed one
    main: Trace | None
    start: float | None  # the first value drawn
    nan_marks: list[tuple[float, tuple[int, int, int]]]


@dataclass(slots=True)
class _KeptFrame:
    context: tuple  # what every curve's drawing depends on besides the curve: window, columns, log y, look
    curves: dict[str, _Kept]
    order: list[CurveInput]  # the curves given, in order ...
    cols_of: list[ColumnData]  # ... and their columns
    pooled: bool  # the pools (see _Pools) hold these curves' columns


def _kept_parts(curves: list[CurveInput], view: ChartView, window: Window, columns: int,
                background: tuple[int, int, int], memo: dict) -> _Parts:
    """:func:`_parts` for a frame that costs what changed: a curve given again as the very object of
    the last frame (on the same axis and look) is not asked its columns again and keeps its traces,
    and the auto log y reads pools of every curve's column extremes kept sorted, so a run switched
    on or off costs its own columns, not a pass over every curve's.

    The same :class:`_Parts` as :func:`_parts` (a unit test holds them equal); a curve object stands
    for its points: :class:`~tuiloss.ui.curves.Curves` makes a new one whenever they changed.
    """
    before: _KeptFrame | None = memo.get("kept")
    grid = (window, columns)
    last = before.curves if before is not None and before.context[0] == grid else {}
    # The curves that are not the very objects of the last frame at the same places: when the
    # others are (a followed run among idle ones), only these are looked at below.
    changed = _changed_places(curves, before.order) if last else None
    if changed is not None:
        cols_of = list(before.cols_of)
        for k in changed:
            cols_of[k] = curves[k].raw(window.step_lo, window.step_hi, columns, window.log)
    else:
        cols_of = []
        for curve in curves:
            seen = last.get(curve.key)
            cols_of.append(seen.cols if seen is not None and seen.curve is curve
                           else curve.raw(window.step_lo, window.step_hi, columns, window.log))
    if view.log_y is not None:
        log_y = view.log_y
        memo.pop("pools", None)
    else:
        pools = memo.get("pools")
        if pools is None:
            pools = memo["pools"] = _Pools()
        if changed is not None and before.pooled:
            log_y = pools.update_some([(curves[k].key, cols_of[k]) for k in changed])
        else:
            log_y = pools.update(curves, cols_of)
    fine = not view.ascii and not view.no_color
    context = (grid, log_y, fine, view.ascii, view.smoothing > 0, background)
    if before is None or before.context != context:
        last = {}
    if changed is not None and last:
        kept = dict(last)
        for k in changed:
            curve, cols = curves[k], cols_of[k]
            seen = last[curve.key]
            if seen.curve is not curve or seen.cols is not cols:
                kept[curve.key] = _kept_curve(curve, cols, view, window, columns, log_y, fine, background, memo, seen)
    else:
        kept = {}
        for curve, cols in zip(curves, cols_of):
            seen = last.get(curve.key)
            if seen is None or seen.curve is not curve or seen.cols is not cols:
                seen = _kept_curve(curve, cols, view, window, columns, log_y, fine, background, memo, seen)
            kept[curve.key] = seen
    memo["kept"] = _KeptFrame(context, kept, list(curves), cols_of, view.log_y is None)
    entries = list(kept.values())
    drawn = [entry for entry in entries if entry.start is not None]
    return _Parts(log_y,
                  [entry.behind for entry in entries if entry.behind is not None]
                  + [entry.main for entry in entries if entry.main is not None],
                  [entry.drawn.extent for entry in drawn], [entry.drawn.bounds for entry in drawn],
                  [entry.start for entry in drawn],
                  [mark for entry in entries if entry.nan_marks for mark in entry.nan_marks])


def _changed_places(curves: list[CurveInput], before: list[CurveInput]) -> list[int] | None:
    """Where ``curves`` are not the very objects of ``before``, if they are the same keys in the same
    order (a changed place keeps its key); ``None`` if not."""
    if len(curves) != len(before):
        return None
    changed = [k for k, (now, then) in enumerate(zip(curves, before)) if now is not then]
    if any(curves[k].key != before[k].key for k in changed):
        return None
    return changed


def _kept_curve(curve: CurveInput, cols: ColumnData, view: ChartView, window: Window, columns: int, log_y: bool,
                fine: bool, background: tuple[int, int, int], memo: dict, before: _Kept | None = None) -> _Kept:
    """One curve's :class:`_Kept`, as :func:`_parts` draws it. ``before``, the curve's entry of the
    last frame (in the same context): when its new points draw as its old ones did, in the same
    look and without smoothing, its traces are kept (the very objects, whose raster is kept)."""
    drawn = _drawn(memo, (curve.key, "raw"), cols, window, log_y)
    if (before is not None and before.drawn is drawn and before.behind is None and before.main is not None
            and not (curve.smoothed is not None and view.smoothing > 0)
            and before.curve.color == curve.color and before.curve.marker == curve.marker):
        return _Kept(curve, cols, drawn, None, before.main, before.start, before.nan_marks)
    rx, ry = drawn.xs, drawn.ys
    behind = main = None
    marker = "braille" if fine else curve.marker
    if curve.smoothed is not None and view.smoothing > 0:
        if len(rx):
            behind = Trace(rx, ry, fade(curve.color, background) if fine else curve.color, "braille" if fine else ".")
        smooth_cols = curve.smoothed(window.step_lo, window.step_hi, columns, window.log)
        sx, sy = _points(memo, (curve.key, "smoothed"), smooth_cols, window, log_y)
        if len(sx):
            main = Trace(sx, sy, curve.color, marker)
    elif len(rx):
        main = Trace(rx, ry, curve.color, marker)
    return _Kept(curve, cols, drawn, behind, main, float(ry[0]) if len(ry) else None,
                 [(x, curve.color) for x in drawn.nonfinite])


class _Pools:
    """Every curve's finite column minima and maxima, each pool kept sorted, for the auto log y
    (:func:`_spans_decades`): a frame moves the values of the curves that changed in or out of
    them instead of joining and partitioning every curve's (a few hundred thousand values a
    thousand runs)."""

    def __init__(self) -> None:
        self.members: dict[str, tuple[ColumnData, np.ndarray, np.ndarray]] = {}
        self.lows = np.zeros(0)
        self.highs = np.zeros(0)

    def update(self, curves: list[CurveInput], cols_of: list[ColumnData]) -> bool:
        """Hold the pools to the curves' columns ``cols_of``; :func:`_spans_decades` of them."""
        now = {curve.key: cols for curve, cols in zip(curves, cols_of)}
        members = self.members
        gone = [key for key, (cols, _, _) in members.items() if now.get(key) is not cols]
        came = [key for key, cols in now.items() if key not in members or members[key][0] is not cols]
        if gone or came:
            if len(gone) + len(came) > max(64, len(now) // 4):  # most changed: sorted again, whole
                fresh = {key: (cols, *_finite_extremes(cols)) for key, cols in now.items()}
                self.members = fresh
                self.lows = np.sort(np.concatenate([low for _, low, _ in fresh.values()] or [np.zeros(0)]))
                self.highs = np.sort(np.concatenate([high for _, _, high in fresh.values()] or [np.zeros(0)]))
            else:
                self._move(gone, [(key, now[key]) for key in came])
        return self._spans()

    def update_some(self, changed: list[tuple[str, ColumnData]]) -> bool:
        """:meth:`update` when only the curves keyed in ``changed`` (each with its columns now) may
        differ from those the pools hold: the others are not looked at."""
        members = self.members
        moved = [(key, cols) for key, cols in changed if key not in members or members[key][0] is not cols]
        if moved:
            self._move([key for key, _ in moved if key in members], moved)
        return self._spans()

    def _move(self, gone: list[str], came: list[tuple[str, ColumnData]]) -> None:
        """Take the extremes of the curves keyed in ``gone`` out of the pools and put those of
        ``came`` (each with its columns now) in, moving only the values that differ."""
        members = self.members
        out_lows, out_highs, into_lows, into_highs = [], [], [], []
        for key in gone:
            _, low, high = members.pop(key)
            out_lows.append(low)
            out_highs.append(high)
        for key, cols in came:
            low, high = _finite_extremes(cols)
            members[key] = (cols, low, high)
            into_lows.append(low)
            into_highs.append(high)
        _only_what_changed(out_lows, into_lows)
        _only_what_changed(out_highs, into_highs)
        self.lows = _merged(self.lows, out_lows, into_lows)
        self.highs = _merged(self.highs, out_highs, into_highs)

    def _spans(self) -> bool:
        """:func:`_spans_decades` of the pools."""
        lows, highs = self.lows, self.highs
        if not len(lows) or not len(highs) or lows[0] <= 0:
            return False
        return sorted_quantile(highs, 0.98) > LOG_Y_RATIO * sorted_quantile(lows, 0.02)


def _only_what_changed(out: list[np.ndarray], into: list[np.ndarray]) -> None:
    """Cut the values ``out`` of the pool and ``into`` it to those that differ, where a curve's
    values before and after line up (a followed run: the same columns, its last one changed).

    The pool comes out the same: the values equal at the same place leave and come back.
    """
    if len(out) != 1 or len(into) != 1 or len(out[0]) != len(into[0]):
        return
    differ = out[0] != into[0]
    out[0], into[0] = out[0][differ], into[0][differ]


def _merged(pool: np.ndarray, out: list[np.ndarray], into: list[np.ndarray]) -> np.ndarray:
    """The sorted ``pool`` without one of each value of ``out`` (all in it) and with those of ``into``."""
    if out:
        values = np.sort(np.concatenate(out))
        if len(values):
            at = np.searchsorted(pool, values, "left")
            at += np.arange(len(values)) - np.searchsorted(values, values, "left")  # equal values: the next ones
            keep = np.ones(len(pool), dtype=bool)
            keep[at] = False
            pool = pool[keep]
    if into:
        values = np.sort(np.concatenate(into))
        if len(values):
            pool = np.insert(pool, np.searchsorted(pool, values), values)
    return pool


def sorted_quantile(values: np.ndarray, q: float) -> float:
    """``np.quantile(values, q)`` (its default, linear method) of ``values`` already sorted, read off
    its two neighbours with numpy's own arithmetic: the same float, without a partition of them all."""
    n = len(values)
    at = (n - 1) * q
    below = math.floor(at)
    if below >= n - 1:
        return float(values[-1])
    if at < 0:
        return float(values[0])
    gamma = at - below
    a, b = float(values[below]), float(values[below + 1])
    diff = b - a
    return b - diff * (1 - gamma) if gamma >= 0.5 else a + diff * gamma


def build_chart(
    curves: list[CurveInput],
    view: ChartView,
    width: int,
    *,
    height: int = 20,
    metric: str = "",
    background: tuple[int, int, int] = (30, 30, 30),
    memo: dict | None = None,
    x_name: str = "step",
    x_format: Callable[[float], Callable[[float], str]] | None = None,
    follow: bool = False,
) -> ChartSpec:
    """Everything the chart widget needs to draw, for a plot ``width`` x ``height`` cells.

    ``memo`` (a dict kept between calls) remembers each curve's points: a curve
    whose column query returns the same answer object as last time reuses them.
    ``x_name`` names the x axis in the title and ``x_format(span)`` gives how its ticks read
    (default: steps), when the curves' "steps" are another axis' positions (``X``). ``follow``:
    the runs are followed as they grow, so the axis' end moves ahead in steps (see :func:`x_window`).
    """
    spec = ChartSpec(ascii=view.ascii)
    window = x_window(curves, view, memo, follow)
    if window is None:
        spec.empty = "waiting for points…" if curves else "no runs to show"
        spec.title = metric
        return spec
    lo, hi = window.lo, window.hi
    spec.x_lim = (lo, hi)
    lasts = [c.last_step for c in curves if math.isfinite(c.last_step)]
    if view.show_eval:
        lasts += [float(c.eval_steps[-1]) for c in curves if c.eval_steps is not None and len(c.eval_steps)]
    spec.newest_step = max(lasts, default=None)
    spec.x_log = window.log
    columns = max(8, 2 * width)  # braille has two dots per cell
    fine = not view.ascii and not view.no_color
    glyph_index = 0 if fine else 1
    if memo is not None and not view.show_eval and _keyed_apart(curves):
        parts = _kept_parts(curves, view, window, columns, background, memo)
    else:
        parts = _parts(curves, view, window, columns, background, memo)
    log_y = parts.log_y
    y_lo, y_hi, above, below = y_range([], [], log_y, parts.bounds, parts.extents)
    spec.y_lim = (y_lo, y_hi)
    spec.y_log = log_y
    # Where the range was cut, the curves' early values beyond it: an arrow and the farthest start
    # (a spike cut off later in the run is marked at its own step, with its peak).
    starts = parts.starts
    cut_starts = ((above is not None and [v for v in starts if v > y_hi], "↑" if fine else "^", y_hi, max),
                  (below is not None and [v for v in starts if v < y_lo], "↓" if fine else "v", y_lo, min))
    for values, arrow, y, pick in cut_starts:
        if values:
            spec.labels.append(Label(f"{arrow}{fmt_value(pick(values))}", lo, y, "default", "left"))
    # bands first, under every curve; eval points last: never hidden by a curve
    spec.traces = parts.traces

    # Findings marked on the curves.
    for curve in curves:
        for mark in curve.marks:
            glyph = ANOMALY_GLYPHS.get(mark.kind, ("*", "*"))[glyph_index]
            x = window.to_x(mark.step)
            if mark.kind == "nan" or mark.value is None or not math.isfinite(mark.value):
                continue  # NaN/Inf points are marked from the columns
            y = float(value_axis([mark.value], log_y)[0])
            if not math.isfinite(y):
                continue
            y = min(max(y, y_lo), y_hi)
            if mark.kind == "drift" and mark.end_step is not None:
                x1, x2 = max(x, lo), min(window.to_x(mark.end_step), hi)
                if x1 >= x2:
                    continue
                y_bar = min(y + (y_hi - y_lo) * 0.08, y_hi)
                spec.traces.append(Trace([x1, x2], [y_bar, y_bar], curve.color, "braille" if fine else "-"))
                spec.labels.append(Label(f"{glyph}drift", x1, min(y_bar + (y_hi - y_lo) * 0.05, y_hi),
                                         curve.color, "left"))
            elif not lo <= x <= hi:
                continue
            elif mark.kind == "spike":
                spec.labels.append(Label(f"{glyph}{fmt_value(mark.value)}", x, y, curve.color, "left"))
            else:
                spec.labels.append(Label(glyph, x, y, curve.color))
        for step, _reason in curve.segment_starts:
            x = window.to_x(step)
            if lo <= x <= hi:
                spec.vlines.append((x, curve.color))
                spec.labels.append(Label(ANOMALY_GLYPHS["reset"][glyph_index], x, y_hi, curve.color))
    for x, color in parts.nan_marks:
        if lo <= x <= hi:
            spec.labels.append(Label(ANOMALY_GLYPHS["nan"][glyph_index], x, y_hi, color))
    if parts.nan_marks:
        spec.notes.append(f"{ANOMALY_GLYPHS['nan'][glyph_index]} NaN/Inf (top)")
    if window.log and view.zoom == 0 and any(c.has_nonpositive_steps for c in curves):
        spec.notes.append(f"{'step ' if x_name == 'step' else ''}0 at left edge")

    if view.cursor is not None:
        cx = window.to_x(view.cursor)
        if lo <= cx <= hi:
            spec.vlines.append((cx, "white" if fine else "default"))

    # Ticks, labelled in steps and values, never in logs.
    plot_columns = max(width, 10)
    x_label = x_format(window.step_hi - window.step_lo) if x_format is not None else step_label
    if window.log:
        values = log_ticks(lo, hi, max_ticks=max(2, plot_columns // 8))
        spec.x_ticks = ([math.log10(v) for v in values], [x_label(v) for v in values])
    else:
        values = linear_ticks(lo, hi, max(2, min(8, plot_columns // 12)))
        spec.x_ticks = (values, [x_label(v) for v in values])
    if log_y:
        values = log_ticks(y_lo, y_hi, max_ticks=max(3, height // 3))
        spec.y_ticks = ([math.log10(v) for v in values], [fmt_value(v) for v in values])
    else:
        values = linear_ticks(y_lo, y_hi, max(2, min(10, height // 3)))
        spec.y_ticks = (values, tick_labels(values))

    parts = [metric or "loss", f"log {x_name}" if window.log else x_name]
    if log_y:
        parts.append("log y" if view.log_y else "log y (auto)")
    if view.smoothing > 0:
        parts.append(f"EMA {view.smoothing:g}")
    if view.zoom:
        parts.append(f"zoom {x_label(window.to_step(lo))}-{x_label(window.to_step(hi))}")
    if view.show_eval:
        parts.append(("●" if fine else "E") + " eval")
    if view.cursor is not None:
        parts.append(f"cursor {x_label(round(view.cursor)) if x_format is None else x_label(view.cursor)}")
    spec.title = (" - " if view.ascii else " · ").join(parts + spec.notes)
    return spec
