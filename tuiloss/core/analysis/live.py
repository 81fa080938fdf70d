"""Incremental analysis for watch mode: the same findings as :func:`analyze_series`, updated per append.

Per update, the per-point work covers only the new points plus a fixed tail (a few
hundred points whose local medians and noise estimates still depend on what comes
next); the rest of the analysis reads the block summary (at most 256 blocks), the
candidates found so far and at most a few thousand raw points, so its cost does not
grow with the length of the run. Two things start over from scratch, rarely: a new
segment (the step counter went back, the file was replaced), and the first value that
changes the space of the analysis (a value <= 0 in a loss, or more decimal places).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from tuiloss.core.analysis.scan import Scan
from tuiloss.core.analysis.summary import SeriesAnalysis, finish


class LiveAnalyzer:
    """Keeps one series' analysis up to date as points arrive.

    ``update(steps, values, segments)`` takes the whole visible series each time (such
    as ``Series.visible()`` and ``Series.segments``) and returns exactly what
    ``analyze_series`` would return for it (with the same ``higher_is_better``).
    """

    def __init__(self, *, is_eval: bool = False, higher_is_better: bool = False) -> None:
        self.is_eval = is_eval
        self.higher_is_better = higher_is_better
        self._scan = Scan()
        self._scan.sign = -1.0 if higher_is_better else 1.0
        self._last: tuple[object, int, SeriesAnalysis] | None = None

    @property
    def rebuilds(self) -> int:
        """How many times the analysis had to start over (resets, replaced files)."""
        return self._scan.rebuilds

    def update(self, steps: np.ndarray, values: np.ndarray, segments: Sequence = (), signals: Sequence = ()) -> SeriesAnalysis:
        """Analyse the series as it is now.

        Args:
            steps: all visible steps, in order.
            values: the matching values.
            segments: the series' segments (objects with ``start_step`` and ``reason``).
            signals: events of the run's secondary series, as for ``analyze_series``.
        """
        steps = np.asarray(steps, dtype=np.float64).ravel()
        values = np.asarray(values, dtype=np.float64).ravel()
        if self.higher_is_better:  # mirrored inside, as analyze_series does
            values = -values
        key = (_segments_key(segments), tuple(signals))
        scan = self._scan
        if self._last is not None and self._last[0] == key and self._last[1] == len(steps) and scan.n == len(steps):
            n = len(steps)
            if n == 0 or (steps[-1] == scan.steps[-1] and _same(values[-1], scan.values[-1])):
                return self._last[2]
        if len(steps) != len(values):
            size = min(len(steps), len(values))
            steps, values = steps[:size], values[:size]
        with np.errstate(all="ignore"):
            scan.update(steps, values, key[0])
            result = finish(scan, segments, is_eval=self.is_eval, signals=signals)
        self._last = (key, len(steps), result)
        return result


    def prepare(self) -> None:
        """Work out what :meth:`update` reads of every point so far (the block summary, the scales
        that waited for more points), ahead of it: on another thread while the caller does other
        work, and never while it updates."""
        with np.errstate(all="ignore"):
            self._scan.complete_blocks()
            self._scan.catch_up_scales()

    def catch_up(self, steps: np.ndarray, values: np.ndarray, segments: Sequence = (), room: int = 0) -> None:
        """Do the per-point work for the points so far, and no more: while a log is still being
        read, so the :meth:`update` at its end costs what is left (the bounded part). ``room``:
        how many points the series will likely reach."""
        values = np.asarray(values, dtype=np.float64).ravel()
        if self.higher_is_better:
            values = -values
        steps = np.asarray(steps, dtype=np.float64).ravel()
        size = min(len(steps), len(values))
        with np.errstate(all="ignore"):
            self._scan.update(steps[:size], values[:size], _segments_key(segments), room, lazy=True)


def _segments_key(segments: Sequence) -> tuple:
    """Changes whenever a segment is added (earlier visible points may then be hidden)."""
    if not segments:
        return (0,)
    last = segments[-1]
    return (len(segments), getattr(last, "start_step", None), getattr(last, "reason", None))


def _same(a: float, b: float) -> bool:
    return a == b or (a != a and b != b)
