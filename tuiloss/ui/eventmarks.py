"""The runs' events on the chart (``t``) and the ones near the step cursor, without any UI.

Each shown run's events (:func:`~tuiloss.core.timeline.events_of`) are marked in the run's
colour: what changed the training (an LR drop or warm restart, a loss-scale drop, a restart)
as a thin dotted vertical line topped by its letter; what recurs (checkpoint saves, overflows)
as its letter alone on the top row, and an evaluation as a dot on the bottom row, so a run
saved and evaluated every few hundred steps does not hide its curve. Resumes and
other segments keep their own ``↺`` line, drawn whether or not events are shown. The events
are worked out again only when a run got new points.
"""

from __future__ import annotations

import math

import numpy as np

from tuiloss.core.analysis.events import Event
from tuiloss.core.analysis.display import fmt_step
from tuiloss.core.sanitize import safe_label
from tuiloss.core.store import Run
from tuiloss.core.timeline import events_of
from tuiloss.ui.chartdata import ChartSpec
from tuiloss.ui.selection import Selection
from tuiloss.ui.xaxis import XAxis

#: The letter over each kind of mark (the same with ``--ascii``).
GLYPHS = {"lr_drop": "L", "lr_restart": "W", "scale_drop": "S", "overflow": "O", "checkpoint": "C",
          "restart": ">", "eval": ("·", "."), "segment": ("↺", "R")}
#: Where each kind is drawn: a thin line for what changed the training (rare), its letter alone
#: on the top row for what recurs (a save every N steps, overflows), a dot on the bottom row for
#: an evaluation.
PLACES = {"lr_drop": "line", "lr_restart": "line", "scale_drop": "line", "restart": "line",
          "checkpoint": "top", "overflow": "top", "eval": "bottom"}
#: Marks per run at most: past this, the chart would be all marks (events are still listed).
MOST_MARKS = 400


def glyph(kind: str, ascii: bool) -> str:
    found = GLYPHS.get(kind, "*")
    return found if isinstance(found, str) else found[1 if ascii else 0]


class EventMarks:
    """Each run's events, kept while the run is unchanged, and where they fall on the chart."""

    def __init__(self) -> None:
        self._events: dict[str, tuple[tuple, list[Event]]] = {}

    def events(self, run: Run) -> list[Event]:
        key = (run.points, len(run.series), run.primary_metric, len(run.segments))
        kept = self._events.get(run.id)
        if kept is None or kept[0] != key:
            kept = self._events[run.id] = (key, events_of(run))
        return kept[1]

    def _placed(self, run: Run, xaxis: XAxis, spec: ChartSpec) -> list[tuple[float, Event]]:
        """``run``'s events at their x on ``spec``'s axis (log10 when it is a log axis), inside its range."""
        found = self.events(run)
        if not found or spec.empty:
            return []
        placed = xaxis.place(run, np.array([e.step for e in found], dtype=np.float64))
        if placed is None:
            return []
        xs, kept = placed
        lo, hi = spec.x_lim
        out = []
        for x, event in zip(xs.tolist(), [e for e, k in zip(found, kept.tolist()) if k]):
            if spec.x_log:
                x = math.log10(x) if x > 0 else lo
            if lo <= x <= hi:
                out.append((x, event))
        return out

    def mark(self, spec: ChartSpec, runs: list[Run], selection: Selection, xaxis: XAxis, say: bool = True) -> None:
        """Add the events of ``runs`` to ``spec`` as marks, and (``say``) how many in its title."""
        count = 0
        for run in runs:
            placed = [(x, e) for x, e in self._placed(run, xaxis, spec) if e.kind != "segment"]
            color = selection.color(run.id)
            for x, event in placed[:MOST_MARKS]:
                spec.event_marks.append((x, color, glyph(event.kind, spec.ascii), PLACES.get(event.kind, "top")))
            count += len(placed)
        if say:
            spec.title += (" - " if spec.ascii else " · ") + (f"events: {count}" if count else "no events")

    def near(self, spec: ChartSpec, runs: list[Run], numbers: dict[str, int], xaxis: XAxis, cursor: float,
             width: int) -> list[tuple[int, Event]]:
        """The events within a column and a half of the cursor, nearest first: ``(run number, event)``.

        ``numbers`` gives each run's number in the list; ``width`` is the plot's in columns.
        """
        if spec.empty:
            return []
        lo, hi = spec.x_lim
        at = math.log10(cursor) if spec.x_log and cursor > 0 else (lo if spec.x_log else cursor)
        reach = 1.5 * (hi - lo) / max(width, 1)
        found = []
        for run in runs:
            for x, event in self._placed(run, xaxis, spec):
                if abs(x - at) <= reach:
                    found.append((abs(x - at), numbers.get(run.id, 0), event))
        found.sort(key=lambda item: (item[0], item[1]))
        return [(number, event) for _, number, event in found]


def near_text(found: list[tuple[int, Event]], ascii: bool, width: int) -> str:
    """``near the cursor: 1 C checkpoint saved at 2.0K · 3 L lr dropped ...``, cut to ``width``."""
    if not found:
        return ""
    sep = " - " if ascii else " · "
    parts = [f"{number} {glyph(event.kind, ascii)} {safe_label(event.message, 80)} at {fmt_step(event.step)}"
             for number, event in found[:6]]
    text = "near the cursor: " + sep.join(parts)
    if len(text) > width:
        text = text[: max(width - 1, 0)] + ("~" if ascii else "…")
    return text
