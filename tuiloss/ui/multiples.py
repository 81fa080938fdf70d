"""Small multiples (``M``): the shown runs' most telling metrics, one small chart each.

The panes are the loss, its evaluation series, the learning rate and the gradient norm, then
the other metrics the runs log (quality metrics first, then loss scale, throughput, memory
and the rest; counters, steps and clocks are axes, not panes), as many as the terminal holds
at about 38 x 9 cells a pane: four at 80x24, nine at 120x40. Every pane shares the main chart's
x axis (its kind, log or linear, zoom and range: one x window over all panes) and the run
colours; each has its own y axis. Which metrics and where the panes go is headless; the
:class:`MultiplesScreen` only draws them, again twice a second while the logs grow.
"""

from __future__ import annotations

import copy
from collections import Counter
from dataclasses import replace
from typing import TYPE_CHECKING

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Grid
from textual.screen import Screen
from textual.widgets import Static

from tuiloss.core.analysis import metrics as names
from tuiloss.core.analysis.events import EVENT_SERIES
from tuiloss.core.timeline import ELAPSED_SERIES, WALL_SERIES
from tuiloss.ui.markup import safe_label
from tuiloss.ui.widgets import LossChart

if TYPE_CHECKING:
    from tuiloss.core.store import Run

#: Cells a pane needs at least (columns, rows): its frame, ticks and a readable curve.
PANE = (38, 9)
#: The roles of the metrics after the first four, most telling first; the rest are not panes.
LATER_ROLES = ("loss", "ppl", "error", "accuracy", "reward", "scale", "norm", "lr", "throughput", "memory", "other")


def grid_shape(width: int, height: int) -> tuple[int, int]:
    """Columns and rows of panes that fit ``width`` x ``height`` cells (one header row less)."""
    return max(1, width // PANE[0]), max(1, (height - 2) // PANE[1])


def _most_common(found: list[str]) -> str | None:
    return Counter(found).most_common(1)[0][0] if found else None


def pane_metrics(runs: list[Run], count: int) -> tuple[list[str], int]:
    """The metrics of the panes, most telling first, at most ``count``; and how many there were.

    First the runs' primary metric (the one most of them have), its evaluation series, the
    learning rate and the gradient norm; then the others by :data:`LATER_ROLES`, those more
    runs log first, then by name.
    """
    every = Counter(name for run in runs for name in run.series
                    if name not in EVENT_SERIES and name not in WALL_SERIES and name not in ELAPSED_SERIES)
    primary = _most_common([run.primary_metric for run in runs if run.primary_metric])
    first: list[str | None] = [primary]
    first.append(_most_common([n for run in runs for n in [names.eval_counterpart(primary, list(run.series))] if n])
                 if primary else None)
    for role in ("lr", "norm"):
        first.append(_most_common([name for run in runs for name in run.series
                                   if names.role(name) == role and not names.is_eval(name)]))
    chosen = [name for name in first if name is not None and name in every]
    chosen = list(dict.fromkeys(chosen))
    rank = {role: k for k, role in enumerate(LATER_ROLES)}
    rest = [name for name in every if name not in chosen and names.role(name) in rank]
    rest.sort(key=lambda name: (rank[names.role(name)], -every[name], name))
    panes = chosen + rest
    return panes[:count], len(panes)


class MultiplesScreen(Screen[None]):
    """The grid of small charts over the main view's runs, axis and settings."""

    BINDINGS = [Binding("escape,M,q", "close", "Back"),
                Binding("x", "toggle_log_x", "Log x"), Binding("X", "cycle_x_axis", "X axis"),
                Binding("t", "toggle_events", "Events")]
    DEFAULT_CSS = """
    MultiplesScreen { layout: vertical; }
    MultiplesScreen #multiples-title { height: 1; padding: 0 1; }
    MultiplesScreen Grid { height: 1fr; grid-gutter: 0 1; }
    MultiplesScreen LossChart { height: 1fr; width: 1fr; min-height: 6; }
    """

    def __init__(self, viewer) -> None:
        super().__init__()
        self.viewer = viewer
        self.metrics: list[str] = []
        self.total = 0
        self._curves: dict[str, object] = {}

    def compose(self) -> ComposeResult:
        yield Static("", id="multiples-title")
        yield Grid(id="multiples")

    def on_mount(self) -> None:
        self._lay_out()
        self.set_interval(0.5, self.redraw)

    def on_resize(self) -> None:
        self._lay_out()

    def _lay_out(self) -> None:
        """As many panes as fit, each a :class:`LossChart`."""
        columns, rows = grid_shape(self.size.width or self.app.size.width, self.size.height or self.app.size.height)
        metrics, self.total = pane_metrics(self.viewer.shown_runs(), columns * rows)
        grid = self.query_one(Grid)
        if metrics != self.metrics or len(grid.children) != len(metrics):
            self.metrics = metrics
            grid.remove_children()
            grid.mount_all([LossChart() for _ in metrics])
        columns = min(columns, max(1, len(metrics)))
        grid.styles.grid_size_columns = columns
        grid.styles.grid_size_rows = max(1, -(-len(metrics) // columns))
        self.call_after_refresh(self.redraw)

    def redraw(self) -> None:
        viewer = self.viewer
        shown = viewer.shown_runs()
        view = replace(viewer.view, cursor=None)  # the main chart's cursor: not on the panes
        sep = " - " if viewer.config.ascii else " · "
        head = f"small multiples{sep}{len(self.metrics)} of {self.total} metrics{sep}{len(shown)} runs"
        self.query_one("#multiples-title", Static).update(f"{head}{sep}M or escape: back")
        if not self.metrics:
            return
        from tuiloss.ui.curves import Curves

        xaxis = viewer.xaxis
        missing = xaxis.prepare(shown)
        panes = []
        for name in self.metrics:
            curves = self._curves.setdefault(name, Curves())
            selection = copy.copy(viewer.selection)
            selection.metric = name
            panes.append((name, curves, curves.prepare(shown, selection, view, {}, {}, xaxis=xaxis)))
        # One x window for every pane: the union of every pane's curves.
        inputs = [c for _, _, curve_inputs in panes for c in curve_inputs]
        if inputs:
            first, last = min(c.first_step for c in inputs), max(c.last_step for c in inputs)
            positives = [c.min_positive for c in inputs if c.min_positive]
            for c in inputs:
                c.first_step, c.last_step = first, last
                c.min_positive = min(positives) if positives else None
        charts = list(self.query(LossChart))
        for (name, curves, curve_inputs), chart in zip(panes, charts):
            if not chart.size.width:
                continue
            spec = curves.chart(curve_inputs, view, chart.plot_width, height=chart.plot_height,
                                metric=safe_label(name, 30), background=chart.background, xaxis=xaxis)
            if missing and not curve_inputs:
                spec.empty = xaxis.missing_note(missing, len(shown))
            if view.events:
                viewer.eventmarks.mark(spec, shown, viewer.selection, xaxis, say=False)
            chart.draw(spec)

    def action_close(self) -> None:
        self.app.pop_screen()

    def action_toggle_log_x(self) -> None:
        self.viewer.action_toggle_log_x()
        self.redraw()

    def action_cycle_x_axis(self) -> None:
        self.viewer.action_cycle_x_axis()
        self.redraw()

    def action_toggle_events(self) -> None:
        self.viewer.action_toggle_events()
        self.redraw()
