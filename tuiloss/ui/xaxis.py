"""The chart's x axis: the step, or wall time, time since start or a progress counter (``X``).

Headless: which axes the shown runs have (:func:`~tuiloss.core.timeline.axes_of`), where each
run's points fall on the chosen one, how its ticks read, and which runs lack it (they are said
in the chart's title, never dropped silently). Wall time is drawn as seconds from the earliest
start among the shown runs, so a log x axis means something there too; its ticks read as UTC
clock times.
"""

from __future__ import annotations

import math
import time
from typing import Callable

import numpy as np

from tuiloss.core import timeline
from tuiloss.core.analysis.display import step_label
from tuiloss.core.store import Run


def duration_label(seconds: float) -> str:
    """A short tick label of a duration: ``0``, ``45s``, ``12m``, ``3.5h``, ``2d``."""
    if not math.isfinite(seconds):
        return "-"
    size = abs(seconds)
    sign = "-" if seconds < 0 else ""
    for unit, scale in (("d", 86400.0), ("h", 3600.0), ("m", 60.0)):
        if size >= scale:
            value = size / scale
            text = f"{value:.0f}" if abs(value - round(value)) < 0.05 or value >= 10 else f"{value:.1f}"
            return f"{sign}{text}{unit}"
    return f"{sign}{size:.0f}s" if size >= 1 or size == 0 else f"{sign}{size:.2g}s"


def clock_label(origin: float, span: float) -> Callable[[float], str]:
    """Tick labels of wall time ``origin + x`` (UTC): ``HH:MM`` within two days, else ``MM-DD HH:MM``."""
    fmt = "%H:%M" if span < 2 * 86400 else "%m-%d %H:%M"
    if span < 600:
        fmt = "%H:%M:%S"

    def label(x: float) -> str:
        if not math.isfinite(x):
            return "-"
        return time.strftime(fmt, time.gmtime(origin + x))

    return label


class XAxis:
    """The chosen x axis and where each run's steps fall on it (kept per run while it is unchanged)."""

    def __init__(self, name: str = "step") -> None:
        self.name = name
        self._maps: dict[str, tuple[tuple, tuple[np.ndarray, np.ndarray] | None]] = {}
        self._axes: dict[str, tuple[tuple, list[str]]] = {}
        self.origin = 0.0  # wall time: the earliest start of the shown runs, x = 0
        self._placed: dict[tuple, tuple[np.ndarray, np.ndarray]] = {}  # the newest placement per (run, size)

    @property
    def is_step(self) -> bool:
        return self.name == "step"

    def axes_of(self, run: Run) -> list[str]:
        key = (run.points, len(run.series))
        kept = self._axes.get(run.id)
        if kept is None or kept[0] != key:
            kept = self._axes[run.id] = (key, timeline.axes_of(run))
        return kept[1]

    def present(self, runs: list[Run]) -> list[str]:
        """The axes at least one of ``runs`` has, in the order ``X`` cycles through them."""
        have = {axis for run in runs for axis in self.axes_of(run)}
        return [axis for axis in timeline.AXES if axis in have or axis == "step"]

    def cycle(self, runs: list[Run]) -> str:
        """Choose the next axis of :meth:`present` after the current one; return it."""
        axes = self.present(runs)
        at = axes.index(self.name) if self.name in axes else -1
        self.name = axes[(at + 1) % len(axes)]
        return self.name

    def mapping(self, run: Run) -> tuple[np.ndarray, np.ndarray] | None:
        """``(steps, x)`` of ``run`` on the chosen axis (wall time from :attr:`origin`); None when it lacks it."""
        key = (self.name, run.points, len(run.series))
        kept = self._maps.get(run.id)
        if kept is None or kept[0] != key:
            kept = self._maps[run.id] = (key, timeline.axis_values(run, self.name))
        found = kept[1]
        if found is None or self.name != "wall":
            return found
        return found[0], found[1] - self.origin

    def prepare(self, runs: list[Run]) -> list[Run]:
        """Get ready to place ``runs``: the wall-time origin; return those that lack the axis."""
        if self.is_step:
            return []
        missing, starts = [], []
        for run in runs:
            found = self.mapping(run) if self.name != "wall" else self._raw(run)
            if found is None or not len(found[1]):
                missing.append(run)
            elif self.name == "wall":
                starts.append(float(found[1][0]))
        if self.name == "wall":
            self.origin = min(starts) if starts else 0.0
        return missing

    def _raw(self, run: Run) -> tuple[np.ndarray, np.ndarray] | None:
        self.mapping(run)
        return self._maps[run.id][1]

    def place(self, run: Run, steps: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        """``steps`` of ``run`` on the axis: their x and which of them were kept; None when it lacks the axis."""
        if self.is_step:
            return np.asarray(steps, dtype=np.float64), np.ones(len(steps), dtype=bool)
        at = self.mapping(run)
        if at is None:
            return None
        steps = np.asarray(steps, dtype=np.float64)
        # A redraw places the same curves again: kept while the run, its clock and the origin are unchanged.
        key = (run.id, self.name, len(steps), float(steps[-1]) if len(steps) else None, float(steps[0]) if len(steps) else None,
               self._maps[run.id][0], self.origin)
        found = self._placed.get(key)
        if found is None:
            if len(self._placed) > 4096:
                self._placed.clear()
            found = self._placed[key] = timeline.map_steps(steps, at)
        return found

    def step_at(self, run: Run, x: float) -> float | None:
        """The step of ``run`` at ``x`` on the axis (None when it lacks the axis)."""
        if self.is_step:
            return x
        at = self.mapping(run)
        if at is None or not len(at[0]):
            return None
        return float(np.interp(x, at[1], at[0]))

    def label(self) -> str:
        """The axis' name in the chart's title."""
        return timeline.AXIS_NAMES[self.name]

    def formatter(self, span: float) -> Callable[[float], str]:
        """How a tick (or the cursor) on this axis reads, for an axis ``span`` wide."""
        if self.name == "wall":
            return clock_label(self.origin, span)
        if self.name == "elapsed":
            return duration_label
        return step_label

    def missing_note(self, missing: list[Run], shown: int) -> str | None:
        """What the title says of runs without the axis (``2 of 5 runs have no wall time``)."""
        if not missing:
            return None
        name = timeline.AXIS_NAMES[self.name]
        if len(missing) == shown:
            return f"no run has {name}"
        return f"no {name} in {len(missing)} of {shown} runs"
