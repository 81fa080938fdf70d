"""``tuiloss report --plot``: the chart as text under the findings, for job output and CI logs.

Drawn with plotext, which is made for static plots printed to stdout. The live viewer keeps its
own canvas (:mod:`tuiloss.ui.canvas`), several times faster when it redraws ten runs many times
a second; a static plot is drawn once. Both are fed the same per-column min/max summaries
(:func:`~tuiloss.core.analysis.downsample.minmax_columns`), so a spike one step wide still reaches
its peak, and both use the viewer's colours, run markers and finding glyphs.

Headless: no Textual here. The plot is a string; the caller prints it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from tuiloss.core.analysis.display import fmt_value, step_label
from tuiloss.core.analysis.downsample import ColumnData, minmax_columns
from tuiloss.core.report import Report, RunReport
from tuiloss.core.sanitize import safe_label
from tuiloss.core.store import Store
from tuiloss.ui.chartdata import ANOMALY_GLYPHS, log_ticks, spans_decades
from tuiloss.ui.selection import ASCII_MARKERS, PALETTE

#: Columns the y labels and the frame take from the plot's width.
Y_MARGIN = 10
#: Below this many columns there is no room for a chart.
MIN_WIDTH = 30


@dataclass(frozen=True, slots=True)
class Curve:
    label: str
    final: float | None
    color: tuple[int, int, int]
    marker: str
    columns: ColumnData
    marks: tuple[tuple[str, float, float | None], ...]  # kind, step, value (None: at the top)


def render_plot(report: Report, store: Store, *, width: int, height: int = 20, log_x: bool = True,
                color: bool = False) -> str:
    """The primary metric of every run in ``report`` on one chart, ``width`` columns wide.

    The step axis is logarithmic unless ``log_x`` is false (steps at or below zero are then left
    out of a log axis, as in the viewer), the value axis is logarithmic when the values span more
    than a decade. Spikes, divergences, NaNs and drifts are marked with the viewer's glyphs. Without
    ``color`` the output holds no escape code and each run is drawn with its own character.
    """
    import plotext  # a static plot only: `report` without --plot never loads it

    width = max(int(width), MIN_WIDTH)
    entries = [(entry, store.runs[entry.id]) for entry in report.runs
               if entry.primary_metric and entry.id in store.runs and entry.primary_metric in store.runs[entry.id].series]
    visible = [(entry, run.series[entry.primary_metric].visible()) for entry, run in entries]
    visible = [(entry, steps, values) for entry, (steps, values) in visible if len(steps)]
    if not visible:
        return "(no points to plot)\n"
    lo, hi = _x_range([steps for _, steps, _ in visible], log_x)
    plot_columns = max(width - Y_MARGIN, 10)
    curves = [_curve(k, entry, steps, values, lo, hi, plot_columns, log_x) for k, (entry, steps, values) in enumerate(visible)]
    log_y = spans_decades([curve.columns for curve in curves])

    fx = np.log10 if log_x else np.asarray  # plotext draws on linear axes; the log is taken here
    fy = np.log10 if log_y else np.asarray
    fig = plotext.figure
    fig.clear()
    plotext.terminal.limit(False, False)
    fig.plot_size(width, height)
    for curve in curves:
        x, y = _envelope(curve.columns, log_y)
        if len(x):
            symbol = "hd" if color else curve.marker
            fig.draw(fig.signal(list(fx(x)), list(fy(y)), marker=plotext.marker(symbol, pixel=curve.color)).lines())
    top = _top(curves)
    for curve in curves:
        for kind, step, value in curve.marks:
            at = value if value is not None and math.isfinite(value) and (value > 0 or not log_y) else top
            if step > 0 or not log_x:
                glyph = plotext.marker(ANOMALY_GLYPHS[kind][0 if color else 1], pixel=curve.color)
                fig.draw(fig.signal([float(fx(step))], [float(fy(at))], marker=glyph))
    names = list(dict.fromkeys(entry.primary_metric for entry, _, _ in visible))
    metric = " / ".join(names[:3]) + (" / ..." if len(names) > 3 else "")
    fig.title(f"{safe_label(metric, 60)} by step{' (log)' if log_x else ''}{', log values' if log_y else ''}")
    if log_x:
        ticks = log_ticks(math.log10(lo), math.log10(hi))
        fig.ruler("x").ticks([math.log10(t) for t in ticks], [step_label(t) for t in ticks])
    if log_y:
        y_lo, y_hi = _value_span(curves)
        ticks = log_ticks(math.log10(y_lo), math.log10(y_hi), max_ticks=5)
        fig.ruler("y").ticks([math.log10(t) for t in ticks], [fmt_value(t) for t in ticks])
    chart = fig.build().string(colorless=not color)
    fig.clear()
    return chart.rstrip("\n") + "\n" + _legend(curves, color) + "\n"


def _x_range(all_steps: list[np.ndarray], log_x: bool) -> tuple[float, float]:
    hi = max(float(steps[-1]) for steps in all_steps)
    if not log_x:
        return min(float(steps[0]) for steps in all_steps), max(hi, min(float(s[0]) for s in all_steps) + 1)
    positive = [float(steps[np.searchsorted(steps, 0.0, side="right")]) for steps in all_steps
                if np.searchsorted(steps, 0.0, side="right") < len(steps)]
    lo = min(positive) if positive else 1.0
    return lo, max(hi, lo * 10)


def _curve(index: int, entry: RunReport, steps: np.ndarray, values: np.ndarray, lo: float, hi: float,
           width: int, log_x: bool) -> Curve:
    columns = minmax_columns(steps, values, lo, hi, width, log_x)
    metric = entry.primary
    marks = []
    for anomaly in metric.anomalies if metric is not None else ():
        if anomaly.kind in ANOMALY_GLYPHS and anomaly.step is not None and math.isfinite(anomaly.step):
            marks.append((anomaly.kind, anomaly.step, anomaly.value))
    final = metric.final if metric is not None else None
    return Curve(entry.label, final, PALETTE[index % len(PALETTE)], ASCII_MARKERS[index % len(ASCII_MARKERS)], columns,
                 tuple(marks))


def _envelope(columns: ColumnData, positive: bool) -> tuple[np.ndarray, np.ndarray]:
    """Each column's min then max at its centre: joined, the line covers every column's range."""
    ok = np.isfinite(columns.min) & np.isfinite(columns.max)
    if positive:
        ok &= columns.min > 0
    x, low, high = columns.x[ok], columns.min[ok], columns.max[ok]
    return np.repeat(x, 2), np.column_stack([low, high]).ravel()


def _value_span(curves: list[Curve]) -> tuple[float, float]:
    lows = [float(np.nanmin(c.columns.min)) for c in curves if np.isfinite(c.columns.min).any()]
    highs = [float(np.nanmax(c.columns.max)) for c in curves if np.isfinite(c.columns.max).any()]
    return min(lows), max(highs)


def _top(curves: list[Curve]) -> float:
    highs = [float(np.nanmax(c.columns.max)) for c in curves if np.isfinite(c.columns.max).any()]
    return max(highs) if highs else 1.0


def _legend(curves: list[Curve], color: bool) -> str:
    lines = []
    for curve in curves:
        value = f"  final {fmt_value(curve.final)}" if curve.final is not None and math.isfinite(curve.final) else ""
        swatch = f"\x1b[38;2;{curve.color[0]};{curve.color[1]};{curve.color[2]}m■\x1b[0m" if color else curve.marker
        lines.append(f"  {swatch} {safe_label(curve.label, 70)}{value}")
    glyphs = "  ".join(f"{ANOMALY_GLYPHS[k][0 if color else 1]} {k}" for k in ("spike", "divergence", "nan", "drift"))
    return "\n".join(lines) + f"\n  marks: {glyphs}"
