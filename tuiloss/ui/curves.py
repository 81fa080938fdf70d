"""Each shown run's curve, prepared for the chart from the store, without any UI.

:class:`Curves` turns the shown runs' series into the chart's
:class:`~tuiloss.ui.chartdata.CurveInput` and keeps what makes a frame cost what
is new: a per-column min/max index per curve
(:class:`~tuiloss.core.analysis.ColumnIndex`, caught up with appended points),
the smoothed values per (run, metric, smoothing, log y), and
:func:`~tuiloss.ui.chartdata.build_chart`'s memo of each curve's points.
The values at the step cursor and the export's legend read the same series.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Mapping

import numpy as np

from tuiloss.core.analysis import ColumnIndex, ema
from tuiloss.core.report import fmt_step, fmt_value
from tuiloss.core.sanitize import safe_label
from tuiloss.core.store import Run, eval_counterpart
from tuiloss.ui.chartdata import ChartSpec, ChartView, CurveInput, Mark, build_chart
from tuiloss.ui.selection import Selection
from tuiloss.ui.xaxis import XAxis


@dataclass(slots=True)
class _Frame:
    """The runs a frame was given, in order, with the version each had, its curve (``None`` for
    none) and metric; and the colours they were given (the selection's dict and its size)."""

    runs: list[Run]
    versions: list[int]
    curves: list[CurveInput | None]
    names: list[str | None]
    colors: dict
    color_count: int


class Curves:
    """The chart's curves and the caches that keep a redraw incremental."""

    def __init__(self) -> None:
        self._indexes: dict[tuple, ColumnIndex] = {}
        self._smooth_cache: dict[tuple, tuple[int, np.ndarray]] = {}
        self._points_memo: dict = {}  # build_chart's per-curve points, reused while a curve is unchanged
        self._inputs: dict[str, tuple[tuple, CurveInput]] = {}  # each run's last curve, and what it was made of
        self._quick: dict[str, tuple] = {}  # each run's last curve, by what a frame checks of the run alone
        self._frame: tuple | None = None  # what the last frame's curves depended on besides their runs
        self._last: _Frame | None = None  # the last frame's runs and their curves, on the step axis
        #: the metric of each run the last :meth:`prepare` was given (its primary one, or the one chosen)
        self.metrics: set[str] = set()

    def prepare(
        self,
        runs: list[Run],
        selection: Selection,
        view: ChartView,
        marks: Mapping[str, list[Mark]],
        marked_metric: Mapping[str, str | None],
        xaxis: XAxis | None = None,
    ) -> list[CurveInput]:
        """The curve of each of ``runs`` that has points in its metric.

        Args:
            runs: the shown runs, in list order.
            selection: their colours, markers and metrics.
            view: the smoothing, log y and eval switches.
            marks: findings to mark, by run id ...
            marked_metric: ... drawn only on the curve of the metric they were found in.
            xaxis: another x axis than the step (``X``): each curve's points where they fall on
                it; a run without it has no curve.
        """
        other_axis = xaxis is not None and not xaxis.is_step
        # A run's curve is made again only when what it is made of changed. What does not depend on
        # the run (the view, the marks) is checked once a frame; then a run whose version (see
        # Run.version: its points, metrics, segments and fields) did not move and whose colour is
        # as it was keeps its curve: a frame of thousands of runs does not build and compare every
        # run's full key.
        frame = (view.smoothing, view.log_y is True, view.show_eval, selection.metric)
        before = self._frame
        same = (not other_axis and before is not None and before[0] == frame
                and (before[1] is marks or not (before[1] or marks)) and before[2] == marked_metric)
        self._frame = (frame, marks, dict(marked_metric)) if not other_axis else None
        colors = selection.colors
        last = self._last
        if (same and last is not None and last.colors is colors and last.color_count == len(colors)
                and len(last.runs) == len(runs) and all(map(operator.is_, last.runs, runs))):
            # The very runs of the last frame, in order (a followed run among idle ones): only those
            # whose version moved are looked at again.
            versions = [run.version for run in runs]
            changed = [k for k, now, then in zip(range(len(runs)), versions, last.versions) if now != then]
            if changed:
                for k in changed:
                    last.curves[k], last.names[k] = self._curve_of(runs[k], selection, view, marks, marked_metric,
                                                                   xaxis, True, self._inputs, self._quick)
                last.versions = versions
                self.metrics = {name for name in last.names if name is not None}
            return [curve for curve in last.curves if curve is not None]
        made, quick = {}, {}
        slots, names = [], []
        for run in runs:
            curve, name = self._curve_of(run, selection, view, marks, marked_metric, xaxis, same, made, quick)
            slots.append(curve)
            names.append(name)
        self._inputs = made
        self._quick = quick
        self.metrics = {name for name in names if name is not None}
        self._last = None if other_axis else _Frame(list(runs), [run.version for run in runs], slots, names, colors,
                                                     len(colors))
        return [curve for curve in slots if curve is not None]

    def _curve_of(self, run: Run, selection: Selection, view: ChartView, marks: Mapping[str, list[Mark]],
                  marked_metric: Mapping[str, str | None], xaxis: XAxis | None, same: bool,
                  made: dict, quick: dict) -> tuple[CurveInput | None, str | None]:
        """One run's curve (``None`` if it has no points in its metric) and its metric, noted in
        ``made`` and ``quick`` (the curves kept for the next frame); ``same``: what the last frame's
        curves depended on besides their runs is unchanged."""
        other_axis = xaxis is not None and not xaxis.is_step
        colors = selection.colors
        was = self._quick.get(run.id) if same and not other_axis else None
        if was is not None and was[2] == run.version and was[3] is colors.get(run.id):
            made[run.id] = self._inputs[run.id]
            quick[run.id] = was
            return was[0], was[1]
        name = selection.metric_of(run)
        if name is None or name not in run.series:
            made.pop(run.id, None)
            quick.pop(run.id, None)
            return None, name
        series = run.series[name]
        run_marks = marks.get(run.id, []) if name == marked_metric.get(run.id) else []
        eval_name = eval_counterpart(name, list(run.series)) if view.show_eval else None
        # a curve on the step axis is made again only when what it is made of changed
        key = None if other_axis else (
            name, len(series), tuple(series.segments), selection.color(run.id), selection.marker(run.id),
            view.smoothing, view.log_y is True, eval_name, len(run.series[eval_name]) if eval_name in run.series else 0,
            run_marks)
        seen = self._inputs.get(run.id)
        if seen is not None and key is not None and seen[0] == key:
            made[run.id] = seen
            quick[run.id] = (seen[1], name, run.version, colors.get(run.id))
            return seen[1], name
        steps, values = series.visible()
        if not len(steps):
            made.pop(run.id, None)
            quick.pop(run.id, None)
            return None, name
        segment_starts = [(s.start_step, s.reason) for s in series.segments[1:]]
        axis = xaxis.name if other_axis else "step"
        if other_axis:
            placed = xaxis.place(run, steps)
            if placed is None or not placed[1].any():
                return None, name
            steps, kept = placed
            values = values[kept]
            run_marks, segment_starts = _marks_on(xaxis, run, run_marks, segment_starts)
        raw = self.column_index((run.id, name, axis), steps, values, len(series.segments))
        smoothed = None
        if view.smoothing > 0:
            smooth_values = self.smoothed(run.id, name, series.visible()[1], view.smoothing, view.log_y is True)
            if other_axis:
                smooth_values = smooth_values[kept]
            smooth_key = (run.id, name, view.smoothing, view.log_y is True, axis)
            smoothed = self.column_index(smooth_key, steps, smooth_values, len(series.segments))
        eval_steps = eval_values = None
        if view.show_eval:
            if eval_name and eval_name in run.series:
                eval_steps, eval_values = run.series[eval_name].visible()
                if other_axis:
                    placed = xaxis.place(run, eval_steps)
                    eval_steps, eval_values = placed[0], eval_values[placed[1]]
        first_positive = int(np.searchsorted(steps, 0.0, side="right"))
        curve = CurveInput(
            key=run.id,
            color=selection.color(run.id),
            marker=selection.marker(run.id),
            first_step=float(steps[0]),
            last_step=float(steps[-1]),
            min_positive=float(steps[first_positive]) if first_positive < len(steps) else None,
            raw=raw.query,
            smoothed=smoothed.query if smoothed is not None else None,
            eval_steps=eval_steps,
            eval_values=eval_values,
            marks=run_marks,
            segment_starts=segment_starts,
            has_nonpositive_steps=bool(steps[0] <= 0),
        )
        if key is not None:
            made[run.id] = (key, curve)
            quick[run.id] = (curve, name, run.version, colors.get(run.id))
        return curve, name

    def chart(self, curves: list[CurveInput], view: ChartView, width: int, *, height: int, metric: str,
              background: tuple[int, int, int], xaxis: XAxis | None = None, follow: bool = False) -> ChartSpec:
        """:func:`~tuiloss.ui.chartdata.build_chart` of ``curves``, reusing the points of unchanged ones
        (``follow``: the runs are followed as they grow, see :func:`~tuiloss.ui.chartdata.x_window`)."""
        if xaxis is not None and not xaxis.is_step:
            return build_chart(curves, view, width, height=height, metric=metric, background=background,
                               memo=self._points_memo, x_name=xaxis.label(), x_format=xaxis.formatter, follow=follow)
        return build_chart(curves, view, width, height=height, metric=metric, background=background,
                           memo=self._points_memo, follow=follow)

    def column_index(self, key: tuple, steps: np.ndarray, values: np.ndarray, segments: int) -> ColumnIndex:
        """The incremental per-column min/max index of one curve, caught up with its points."""
        index = self._indexes.get(key)
        if index is None:
            index = self._indexes[key] = ColumnIndex()
        index.sync(steps, values, key=segments)
        return index

    def smoothed(self, run_id: str, name: str, values: np.ndarray, smoothing: float, log_y: bool) -> np.ndarray:
        """The EMA of ``values``, computed again only when their number changed."""
        key = (run_id, name, smoothing, log_y)
        cached = self._smooth_cache.get(key)
        if cached is not None and cached[0] == len(values):
            return cached[1]
        smoothed = ema(values, smoothing, log=log_y)
        self._smooth_cache[key] = (len(values), smoothed)
        return smoothed


def _marks_on(xaxis: XAxis, run: Run, marks: list[Mark], segment_starts: list[tuple[float, str]]):
    """``marks`` and ``segment_starts`` at their places on ``xaxis`` (those off it left out)."""
    def one(step: float | None) -> float | None:
        if step is None:
            return None
        placed = xaxis.place(run, np.array([step], dtype=np.float64))
        return float(placed[0][0]) if placed is not None and placed[1][0] else None

    moved = []
    for mark in marks:
        x = one(mark.step)
        if x is not None:
            moved.append(Mark(mark.kind, x, mark.value, one(mark.end_step)))
    starts = [(x, reason) for x, reason in ((one(step), reason) for step, reason in segment_starts) if x is not None]
    return moved, starts


def value_at(steps: np.ndarray, values: np.ndarray, step: float) -> float | None:
    """The value at the point nearest to ``step``."""
    if not len(steps):
        return None
    i = int(np.searchsorted(steps, step))
    candidates = [j for j in (i - 1, i) if 0 <= j < len(steps)]
    j = min(candidates, key=lambda k: abs(steps[k] - step))
    return float(values[j])


def values_at(runs: list[Run], selection: Selection, step: float, xaxis: XAxis | None = None) -> dict[str, float | None]:
    """Each of ``runs``' value of its metric nearest to ``step``, by run id (runs without a metric left out).

    With ``xaxis`` (another axis than the step), ``step`` is a place on it: each run's value is
    the one at its own step there (None for a run without the axis).
    """
    out: dict[str, float | None] = {}
    for run in runs:
        has, value = value_at_cursor(run, selection, step, xaxis)
        if has:
            out[run.id] = value
    return out


def value_at_cursor(run: Run, selection: Selection, step: float,
                    xaxis: XAxis | None = None) -> tuple[bool, float | None]:
    """Whether ``run`` has the metric :meth:`Selection.metric_of` picks, and its value nearest to ``step``
    (one run of :func:`values_at`, for the rows the runs list draws); ``step`` is a place on
    ``xaxis`` as :func:`values_at` says."""
    name = selection.metric_of(run)
    if not name:
        return False, None
    steps, values = run.series[name].visible()
    at = step if xaxis is None else xaxis.step_at(run, step)
    return True, (value_at(steps, values, at) if at is not None else None)


def legend_text(runs: list[Run], selection: Selection, plain: bool) -> str:
    """The chart's legend as plain text: number, swatch, label and last value of each shown listed run."""
    lines = []
    for number, run in selection.numbered(runs):
        if not selection.is_on(run.id):
            continue
        name = selection.metric_of(run)
        series = run.series.get(name) if name else None
        last = fmt_value(float(series.visible()[1][-1])) if series is not None and len(series) else "-"
        steps = f"{fmt_step(float(series.visible()[0][-1]))}" if series is not None and len(series) else "-"
        shown = str(number) if number else "-"  # 0: a job's other rank, which has no number
        lines.append(f"{shown:>2} {selection.swatch(run.id, plain)} {safe_label(run.label, 100)}  last {last} at {steps}")
    return "\n".join(lines)
