"""Small multiples (``M``): the shown runs' most telling metrics, one small chart each.

The panes are each run's loss (its primary metric), its evaluation series, its learning rate
and its gradient norm, whatever the run calls them, then the other metrics the runs log (quality metrics first, then loss scale, throughput, memory
and the rest; counters, steps and clocks are axes, not panes), as many as the terminal holds
at about 38 x 9 cells a pane: four at 80x24, nine at 120x40. Every pane shares the main chart's
x axis (its kind, log or linear, zoom and range: one x window over all panes) and the run
colours; each has its own y axis. Which metrics and where the panes go is headless; the
:class:`MultiplesScreen` only draws them, again twice a second while the logs grow.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace
from typing import Callable

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Grid
from textual.screen import Screen
from textual.widgets import Static

from tuiloss.core.analysis import metrics as names
from tuiloss.core.analysis.events import EVENT_SERIES
from tuiloss.core.store import Run
from tuiloss.core.timeline import ELAPSED_SERIES, WALL_SERIES
from tuiloss.ui.markup import safe_label
from tuiloss.ui.widgets import LossChart

#: Cells a pane needs at least (columns, rows): its frame, ticks and a readable curve.
PANE = (38, 9)
#: The roles of the metrics after the first four, most telling first; the rest are not panes.
LATER_ROLES = ("loss", "ppl", "error", "accuracy", "reward", "scale", "norm", "lr", "throughput", "memory", "other")


def grid_shape(width: int, height: int) -> tuple[int, int]:
    """Columns and rows of panes that fit ``width`` x ``height`` cells (one header row less)."""
    return max(1, width // PANE[0]), max(1, (height - 2) // PANE[1])


@dataclass(frozen=True, slots=True)
class Pane:
    """One small chart: its title and which metric of each run it draws (None: the run has none)."""

    title: str
    pick: Callable[[Run], str | None]


def _primary(run: Run) -> str | None:
    return run.primary_metric


def _eval(run: Run) -> str | None:
    primary = run.primary_metric
    return names.eval_counterpart(primary, list(run.series)) if primary else None


def _of_role(role: str) -> Callable[[Run], str | None]:
    def pick(run: Run) -> str | None:
        found = [name for name in run.series if names.role(name) == role and not names.is_eval(name)
                 and name not in EVENT_SERIES]
        return min(found, key=lambda name: (len(name), name)) if found else None

    return pick


def _named(name: str) -> Callable[[Run], str | None]:
    return lambda run: name if name in run.series else None


#: The first panes: each run's own loss, eval loss, learning rate and grad norm, whatever it calls them.
FIRST = (Pane("loss", _primary), Pane("eval loss", _eval), Pane("learning rate", _of_role("lr")),
         Pane("grad norm", _of_role("norm")))


def panes_of(runs: list[Run], count: int) -> tuple[list[Pane], int]:
    """The panes for ``runs``, most telling first, at most ``count``; and how many there were.

    First :data:`FIRST` (each run's primary metric, its evaluation series, its learning rate and
    gradient norm), those some run has; then the other metrics by :data:`LATER_ROLES`, those
    more runs log first, then by name.
    """
    panes, used = [], set()
    for pane in FIRST:
        picked = {name for run in runs for name in [pane.pick(run)] if name}
        if picked:
            panes.append(pane)
            used |= picked
    every = Counter(name for run in runs for name in run.series
                    if name not in used and name not in EVENT_SERIES and name not in WALL_SERIES
                    and name not in ELAPSED_SERIES)
    rank = {role: k for k, role in enumerate(LATER_ROLES)}
    rest = [name for name in every if names.role(name) in rank]
    rest.sort(key=lambda name: (rank[names.role(name)], -every[name], name))
    panes += [Pane(name, _named(name)) for name in rest]
    return panes[:count], len(panes)


class _PaneSelection:
    """The viewer's selection (colours, markers, which runs), each run's metric the pane's."""

    def __init__(self, selection, pane: Pane) -> None:
        self._selection, self._pane = selection, pane

    def __getattr__(self, name: str):
        return getattr(self._selection, name)

    def metric_of(self, run: Run) -> str | None:
        return self._pane.pick(run)

    def eval_of(self, run: Run) -> str | None:
        return None


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
        self.panes: list[Pane] = []
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
        panes, self.total = panes_of(self.viewer.shown_runs(), columns * rows)
        grid = self.query_one(Grid)
        if [p.title for p in panes] != [p.title for p in self.panes] or len(grid.children) != len(panes):
            self.panes = panes
            grid.remove_children()
            grid.mount_all([LossChart() for _ in panes])
        columns = min(columns, max(1, len(panes)))
        grid.styles.grid_size_columns = columns
        grid.styles.grid_size_rows = max(1, -(-len(panes) // columns))
        self.call_after_refresh(self.redraw)

    def redraw(self) -> None:
        viewer = self.viewer
        shown = viewer.shown_runs()
        view = replace(viewer.view, cursor=None)  # the main chart's cursor: not on the panes
        sep = " - " if viewer.config.ascii else " · "
        head = f"small multiples{sep}{len(self.panes)} of {self.total} metrics{sep}{len(shown)} runs"
        self.query_one("#multiples-title", Static).update(f"{head}{sep}M or escape: back")
        if not self.panes:
            return
        from tuiloss.ui.curves import Curves

        xaxis = viewer.xaxis
        missing = xaxis.prepare(shown)
        panes = []
        for pane in self.panes:
            curves = self._curves.setdefault(pane.title, Curves())
            selection = _PaneSelection(viewer.selection, pane)
            panes.append((pane.title, curves, curves.prepare(shown, selection, view, {}, {}, xaxis=xaxis)))
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
