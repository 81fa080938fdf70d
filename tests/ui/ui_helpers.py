"""Shared helpers of the viewer's tests: waiting with deadlines, frozen clocks."""

from __future__ import annotations

import math
import os
import time
from pathlib import Path

import numpy as np

from tuiloss.core.analysis import ColumnData, ema, minmax_columns
from tuiloss.core.driver import Changes, NoWatcher
from tuiloss.ui.chartdata import ColumnQuery, CurveInput
from tuiloss.ui.selection import Selection

#: A fixed wall clock for screens that show ages (2033-05-18).
FROZEN_NOW = 2_000_000_000.0
#: The sample logs' files are dated two hours before that.
FROZEN_MTIME = FROZEN_NOW - 7200


async def wait_for(pilot, predicate, timeout: float = 10.0, what: str = "condition") -> float:
    """Let the app run until ``predicate()`` holds; return the seconds it took."""
    began = time.monotonic()
    deadline = began + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        await pilot.pause(0.02)
    return time.monotonic() - began


async def wait_loaded(pilot, app, timeout: float = 20.0) -> None:
    """Until the first load is applied and the insights of it are shown."""
    await wait_for(pilot, lambda: app.loaded and app.report is not None
                   and app.insights.generation >= (app.findings.baseline_generation or 1), timeout, "the first load")
    await settle(pilot, app, timeout)


async def settle(pilot, app, timeout: float = 10.0) -> None:
    """Until the app says its screen is at rest (:meth:`~tuiloss.ui.app.TuilossApp.settled`)."""
    await wait_for(pilot, app.settled, timeout, "a settled screen")
    await pilot.pause()


def freeze_mtimes(folder: Path, when: float = FROZEN_MTIME) -> None:
    for path in folder.rglob("*"):
        os.utime(path, (when, when))


class StaticWatcher(NoWatcher):
    """A :class:`~tuiloss.core.driver.Watcher` with a fixed mode that never sees changes (for stable screenshots)."""

    def __init__(self, roots: list[str], poll: float | None = None, mode: str = "inotify", reason: str = "") -> None:
        super().__init__()
        self.mode, self.reason = mode, reason

    @property
    def uses_events(self) -> bool:
        return True


class DriftedWatcher(NoWatcher):
    """A watcher whose ``take`` fails, as a method missing from a test double would."""

    def take(self) -> Changes:
        raise AttributeError("'DriftedWatcher' object has no attribute 'take'")


# -- chart inputs straight from arrays (the viewer builds them incrementally) --------------------


def series_columns(steps: np.ndarray, values: np.ndarray) -> ColumnQuery:
    """A column query over fixed arrays (one pass per call; tests and small series)."""

    def query(x_lo: float, x_hi: float, width: int, log_x: bool) -> ColumnData:
        return minmax_columns(steps, values, x_lo, x_hi, width, log_x)

    return query


def curve_from_arrays(key: str, steps, values, *, color=(86, 180, 233), marker="*", smoothing: float = 0.0,
                      log_y: bool = False, **extra) -> CurveInput:
    """A :class:`CurveInput` straight from arrays (no incremental index)."""
    steps = np.asarray(steps, dtype=np.float64)
    values = np.asarray(values, dtype=np.float64)
    positive = steps[steps > 0]
    smoothed = series_columns(steps, ema(values, smoothing, log=log_y)) if smoothing > 0 else None
    return CurveInput(
        key=key,
        color=color,
        marker=marker,
        first_step=float(steps[0]) if len(steps) else math.nan,
        last_step=float(steps[-1]) if len(steps) else math.nan,
        min_positive=float(positive[0]) if len(positive) else None,
        raw=series_columns(steps, values),
        smoothed=smoothed,
        has_nonpositive_steps=bool(len(steps) and steps[0] <= 0),
        **extra,
    )


class CountingSelection(Selection):
    """A selection that counts the rows worked out (each asks for its run's swatch once)."""

    def __init__(self) -> None:
        super().__init__(None)
        self.asked = 0

    def swatch(self, run_id, plain):
        self.asked += 1
        return super().swatch(run_id, plain)
